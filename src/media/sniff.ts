import { fileTypeFromBuffer } from "file-type";

/**
 * The media type of a file from its first bytes (never from what the platform said): a known
 * signature, else `text/plain` for bytes that decode as UTF-8 without control characters, else
 * `application/octet-stream`.
 */
export async function sniffMediaType(head: Uint8Array): Promise<string> {
  const found = await fileTypeFromBuffer(head).catch(() => undefined);
  if (found) return found.mime;
  return looksLikeText(head) ? "text/plain" : "application/octet-stream";
}

function looksLikeText(head: Uint8Array): boolean {
  if (head.byteLength === 0) return false;
  // The head may end inside a multi-byte character: drop an incomplete tail before decoding.
  let end = head.byteLength;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const byte = head[end - back]!;
    if ((byte & 0xc0) !== 0x80) {
      const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
      if (need > back) end -= back;
      break;
    }
  }
  // Tab, newline, form feed and carriage return are text; other C0 controls and DEL are not.
  for (const byte of head) {
    if (byte === 0x7f || (byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13))
      return false;
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head.subarray(0, end));
    return true;
  } catch {
    return false;
  }
}

/** Image types the scaler decodes. */
export const IMAGE_TYPES = new Set([
  "image/jpeg",
  "image/png",
  "image/webp",
  "image/gif",
  "image/avif",
  "image/tiff",
]);

/** Text-like types inlined for the model. */
export function isTextType(mediaType: string): boolean {
  return mediaType.startsWith("text/") || mediaType === "application/json" || mediaType === "application/xml";
}
