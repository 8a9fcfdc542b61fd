import { type ChannelName, type FileLimits, isPhotoType, type MarkupDialect } from "../channels/types.ts";
import type { Renderer } from "./render.ts";
import type { OutboxMedia, RenderedText } from "./types.ts";

/** Whole megabytes where exact, else one decimal: "10 MB", "2.5 MB"; small sizes in bytes. */
export function formatMegabytes(bytes: number): string {
  if (bytes < 100 * 1024) return `${bytes} bytes`;
  const mb = bytes / (1024 * 1024);
  return `${Number.isInteger(mb) ? mb : mb.toFixed(1)} MB`;
}

/**
 * Why `channel` cannot take this file, or null when it can: the channel sends no files, or the
 * file is over its limit (photos have their own where the platform has one). The reason is what
 * the failed record says, so it names the file, its size and the limit.
 */
export function mediaRefusal(
  media: Pick<OutboxMedia, "filename" | "mimeType" | "sizeBytes">,
  channel: ChannelName,
  limits: FileLimits | undefined,
): string | null {
  if (limits === undefined) {
    return `${channel} cannot send files; ${media.filename} was not sent. Send a link to it instead.`;
  }
  const photo = isPhotoType(media.mimeType);
  const maxBytes = photo ? (limits.maxPhotoBytes ?? limits.maxFileBytes) : limits.maxFileBytes;
  if (media.sizeBytes <= maxBytes) return null;
  return (
    `${media.filename} (${media.mimeType}, ${formatMegabytes(media.sizeBytes)}) is over ${channel}'s ` +
    `${formatMegabytes(maxBytes)} limit for ${photo ? "photos" : "files"} a bot uploads; it was not sent.`
  );
}

/**
 * A media record's rendering: its caption as chunk 0 when it fits the platform's caption limit,
 * else an empty caption and the text as the following chunks (sent as messages after the file).
 */
export function renderMediaCaption(
  renderer: Renderer,
  markdown: string,
  markup: MarkupDialect,
  format: "rich" | "plain",
  limits: { maxMessageChars: number; maxCaptionChars: number },
): RenderedText {
  const text = renderer.render(markdown, markup, format, limits.maxMessageChars);
  if (text.chunks.length === 0) return { format: text.format, chunks: [""] };
  if (text.chunks.length === 1 && text.chunks[0]!.length <= limits.maxCaptionChars) return text;
  return { format: text.format, chunks: ["", ...text.chunks] };
}
