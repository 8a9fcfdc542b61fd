/**
 * What `/export` answers with: the conversation as a Markdown file where the channel takes files,
 * else (a channel that sends no files, or a transcript over its file limit) as a Markdown message cut
 * to a readable length.
 */
import type { FileLimits } from "../../channels/types.ts";
import { type ConversationExport, toMarkdown } from "../operator/export.ts";

/** Longest /export sent as a chat message; the rest is for `switchboard conversations export`. */
export const EXPORT_MAX_CHARS = 12_000;

export const EXPORT_MIME_TYPE = "text/markdown";

export type ExportReply =
  | { kind: "text"; text: string }
  | { kind: "file"; filename: string; mimeType: string; bytes: Uint8Array; caption: string };

/**
 * The reply to /export. `limits`: how the chat's channel takes files; undefined when it sends
 * none. A transcript over the channel's file limit goes as a cut message, which says where the
 * full export is.
 */
export function exportReply(exported: ConversationExport, limits: FileLimits | undefined): ExportReply {
  const shown = shownMessages(exported);
  if (shown.length > 0 && limits !== undefined) {
    const bytes = new TextEncoder().encode(toMarkdown(exported));
    if (bytes.byteLength <= limits.maxFileBytes) {
      const when = new Date(exported.header.exportedAtMs).toISOString().slice(0, 16).replace("T", " ");
      return {
        kind: "file",
        filename: `conversation-${exported.header.conversationId}.md`,
        mimeType: EXPORT_MIME_TYPE,
        bytes,
        caption: `This conversation as Markdown: ${shown.length} message${shown.length === 1 ? "" : "s"}, exported ${when} UTC.`,
      };
    }
  }
  return { kind: "text", text: exportText(exported) };
}

/** The reply as a message: the transcript cut to EXPORT_MAX_CHARS, saying where the rest is. */
export function exportText(exported: ConversationExport): string {
  return shownMessages(exported).length === 0
    ? "This conversation has no messages yet."
    : toMarkdown(exported, { maxChars: EXPORT_MAX_CHARS });
}

/** The messages the transcript shows: not those of runs set aside (superseded, absorbed). */
function shownMessages(exported: ConversationExport) {
  return exported.messages.filter((m) => m.runState !== "superseded" && m.runState !== "absorbed");
}
