/** Reading a request body within a size limit, however it is framed. */

export class PayloadTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`The request body is over the ${describeBytes(limitBytes)} limit.`);
    this.name = "PayloadTooLargeError";
  }
}

/** `64 KiB`, `20 MB` (one decimal where it has one). */
function describeBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${Math.round((bytes / 1024) * 10) / 10} KiB`;
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;
}

/**
 * The request with its body cut off at `maxBytes`: reading past it (or a body that declares more)
 * fails with PayloadTooLargeError, so every route's read is bounded whether or not it checks. A
 * route may look at Content-Length first and answer before reading anything.
 */
export function limitBody(request: Request, maxBytes: number): Request {
  if (request.body === null) return request;
  const declared = Number(request.headers.get("content-length") ?? "0");
  let seen = 0;
  const body = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes || declared > maxBytes) controller.error(new PayloadTooLargeError(maxBytes));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Request(request, { body, duplex: "half" } as RequestInit);
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
