/** Reading a request body within a size limit, however it is framed. */

export class PayloadTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`The request body is larger than ${limitBytes} bytes.`);
    this.name = "PayloadTooLargeError";
  }
}

/** The body as text, refusing more than `maxBytes` whether or not Content-Length says so. */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (Number.isFinite(declared) && declared > maxBytes) throw new PayloadTooLargeError(maxBytes);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read().catch((error: unknown) => {
      throw isServerBodyLimitError(error) ? new PayloadTooLargeError(maxBytes) : error;
    });
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new PayloadTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/**
 * Bun.serve's own `maxRequestBodySize` surfaces as this error when a handler reads a body past it
 * (Bun has already answered the client with a body-less 413): a client's doing, not a failure.
 */
export function isServerBodyLimitError(error: unknown): boolean {
  return error instanceof Error && error.message.includes("maxRequestBodySize");
}
