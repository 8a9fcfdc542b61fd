/**
 * Files the agent sends to the web chat. A file joins the transcript as a message carrying it;
 * its bytes stay in the gateway's blob store and are served, to the session whose transcript shows
 * the file and to no other, at `/web/api/files/<blob id>`. The page fetches them with the session
 * header (an `<img>` cannot send one) and shows images inline, anything else as a download.
 */
import { create as createContentDisposition } from "content-disposition";
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
  return {
    "content-type": file.mimeType,
    "content-disposition": createContentDisposition(downloadName(file.name), {
      type: file.kind === "image" ? "inline" : "attachment",
    }),
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cache-control": "private, no-store",
    "referrer-policy": "no-referrer",
  };
}

/**
 * Pure: the name a download is saved under. The name comes from the user (an upload) or from a
 * remote server (a file the agent fetched), so only its last path segment is kept (no `../`, no
 * folders), without control characters, quotes or backslashes, at most 200 characters; "file"
 * when nothing is left. content-disposition then writes it as RFC 6266 asks (`filename*` for
 * non-ASCII, with an ASCII fallback).
 */
export function downloadName(name: string): string {
  const last = name.split(/[/\\]/).at(-1) ?? "";
  const cleaned = last
    .replace(/[\p{Cc}\p{Cf}"]/gu, "")
    .trim()
    .replace(/^\.+/, "");
  return Array.from(cleaned).slice(0, 200).join("") || "file";
}
