/**
 * Streaming an attachment over HTTP for an adapter's openFile: statuses mapped to SwitchboardErrors
 * (an outage is retryable, a refusal is not). Messages never include the URL, which may carry a
 * token or a signature.
 */
import { SwitchboardError } from "../src/errors.ts";
import { streamChunks } from "../src/util/stream-chunks.ts";
import type { RemoteFile } from "./types.ts";

export async function downloadFile(
  platform: string,
  url: string,
  init: { headers?: Record<string, string>; signal: AbortSignal; statedSizeBytes?: number },
): Promise<RemoteFile> {
  let response: Response;
  try {
    response = await fetch(url, {
      signal: init.signal,
      redirect: "follow",
      ...(init.headers ? { headers: init.headers } : {}),
    });
  } catch (error) {
    if (init.signal.aborted) throw error;
    const code = (error as { code?: string }).code;
    throw new SwitchboardError(
      "platform_unavailable",
      `${platform} file download failed: ${code ?? (error instanceof Error ? error.name : "network error")}`,
      { retryable: true },
    );
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    const outage = response.status >= 500 || response.status === 429;
    throw new SwitchboardError(
      outage ? "platform_unavailable" : "platform_rejected",
      `${platform} file download answered HTTP ${response.status}`,
      { retryable: outage, details: { status: response.status } },
    );
  }
  const length = Number(response.headers.get("content-length") ?? Number.NaN);
  const sizeBytes = Number.isFinite(length) ? length : init.statedSizeBytes;
  return { body: streamChunks(response.body), ...(sizeBytes === undefined ? {} : { sizeBytes }) };
}

/** Only http(s) URLs are fetched; anything else in a `ref` is refused. */
export function httpUrl(platform: string, ref: string): URL {
  let url: URL;
  try {
    url = new URL(ref);
  } catch {
    throw new SwitchboardError("platform_rejected", `${platform} attachment has no download URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new SwitchboardError("platform_rejected", `${platform} attachment URL is not http(s)`);
  }
  return url;
}
