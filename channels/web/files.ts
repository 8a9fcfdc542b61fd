/**
 * Files the agent sends to the web chat. A file joins the transcript as a message carrying it;
 * its bytes stay in the gateway's blob store and are served, to the session whose transcript shows
 * the file and to no other, at `/web/api/files/<blob id>`. The page fetches them with the session
 * header (an `<img>` cannot send one) and shows images inline, anything else as a download.
 */
import { isPhotoType } from "../types.ts";
import type { WebFile } from "./transcript.ts";

export const WEB_FILES_PATH = "/web/api/files";

/** Pure: how the transcript shows a file stored as `id` with its sniffed type. */
export function webFileOf(file: { id: string; name: string; mimeType: string; sizeBytes: number }): WebFile {
  return {
    id: file.id,
    name: file.name,
    mimeType: file.mimeType,
    sizeBytes: file.sizeBytes,
    kind: isPhotoType(file.mimeType) ? "image" : "file",
  };
}

/**
 * Pure: the headers a file is served with. The type is the one sniffed when it was stored and the
 * browser must not guess another (`nosniff`); only a photo type is shown inline, anything else is
 * a download; and the response runs nothing even when opened on its own (`sandbox`).
 */
export function webFileHeaders(file: WebFile): Record<string, string> {
  const disposition = file.kind === "image" ? "inline" : "attachment";
  return {
    "content-type": file.mimeType,
    "content-disposition": `${disposition}; filename="${asciiName(file.name)}"; filename*=UTF-8''${encodeRFC5987(file.name)}`,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cache-control": "private, no-store",
    "referrer-policy": "no-referrer",
  };
}

/** The name as a quoted-string: printable ASCII only, without quotes or backslashes. */
function asciiName(name: string): string {
  return name.replace(/[^\x20-\x7e]|["\\]/g, "_") || "file";
}

function encodeRFC5987(name: string): string {
  return encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
