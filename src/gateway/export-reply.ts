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

/** How long an export's download link works by default (SWITCHBOARD_EXPORT_TTL_HOURS): 24 hours. */
export const DEFAULT_EXPORT_TTL_MS = 24 * 60 * 60 * 1000;

export type ExportReply =
  | { kind: "text"; text: string }
  | {
      kind: "file";
      filename: string;
      mimeType: string;
      bytes: Uint8Array;
      caption: string;
      /**
       * Where the gateway serves the link (`FileLimits.servedByGateway`): the file is kept until
       * then whatever happens to the conversation, except /forget. Absent: the platform keeps a copy.
       */
      keepUntilMs?: number;
    };

/**
 * The reply to /export. `limits`: how the chat's channel takes files; undefined when it sends
 * none. A transcript over the channel's file limit goes as a cut message, which says where the
 * full export is. Where the gateway serves the file, the caption states how long its link works
 * (`ttlMs` from the export, SWITCHBOARD_EXPORT_TTL_HOURS).
 */
export function exportReply(
  exported: ConversationExport,
  limits: FileLimits | undefined,
  ttlMs: number = DEFAULT_EXPORT_TTL_MS,
): ExportReply {
  const shown = shownMessages(exported);
  if (shown.length > 0 && limits !== undefined) {
    const bytes = new TextEncoder().encode(toMarkdown(exported));
    if (bytes.byteLength <= limits.maxFileBytes) {
      const exportedAtMs = exported.header.exportedAtMs;
      const caption = `This conversation as Markdown: ${shown.length} message${shown.length === 1 ? "" : "s"}, exported ${utcMinute(exportedAtMs)} UTC.`;
      const file = {
        kind: "file" as const,
        filename: `conversation-${exported.header.conversationId}.md`,
        mimeType: EXPORT_MIME_TYPE,
        bytes,
      };
      if (!limits.servedByGateway) return { ...file, caption };
      const keepUntilMs = exportedAtMs + ttlMs;
      return {
        ...file,
        caption: `${caption} The download link works until ${utcMinute(keepUntilMs)} UTC (${describeHours(ttlMs)}), or until /forget.`,
        keepUntilMs,
      };
    }
  }
  return { kind: "text", text: exportText(exported) };
}

const utcMinute = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");

/** `24 hours`, `1 hour`, `90 minutes`. */
function describeHours(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes % 60 !== 0) return `${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = minutes / 60;
  return `${hours} hour${hours === 1 ? "" : "s"}`;
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
