/**
 * The web chat's transcript from the store: what the browser sent (its recorded ingress, chat
 * commands included) and what the outbox showed it (records with a receipt, files too). The in-memory
 * transcript of the web channel is a cache of this, so a restart or an evicted session loses
 * nothing that was shown.
 */
import { webFileOf } from "../../channels/web/files.ts";
import { WEB_ACCOUNT } from "../../channels/web/inbound.ts";
import type { WebFile, WebTranscriptEntry } from "../../channels/web/transcript.ts";
import { UPLOAD_REF_PREFIX } from "../../channels/web/uploads.ts";
import type { OutboxRecord, OutboxRepository } from "../../outbox/types.ts";
import type { RuntimeStore } from "../runtime/store.ts";

const SOURCE = `web:${WEB_ACCOUNT}`;

/**
 * Loads the newest `limit` entries each side of one web user (the id derived from the session id:
 * ingress keys and reply targets hold it, never the session id), oldest first.
 */
export function webHistoryLoader(
  stores: { runtime: RuntimeStore; outbox: OutboxRepository },
  limit: number,
): (userId: string) => Promise<WebTranscriptEntry[]> {
  return async (userId) => {
    const [inputs, records] = await Promise.all([
      stores.runtime.ingressByPrefix(SOURCE, `${userId}:`, limit),
      stores.outbox.list({ destination: { channel: "web", target: userId }, limit }),
    ]);
    return webTranscriptFrom(inputs, records).slice(-limit);
  };
}

/** Pure: the entries of recorded inputs and shown replies, ordered by when they were shown. */
export function webTranscriptFrom(
  inputs: ReadonlyArray<{ key: string; payload: unknown; atMs: number }>,
  records: readonly OutboxRecord[],
): WebTranscriptEntry[] {
  const entries: WebTranscriptEntry[] = [];
  for (const input of inputs) {
    const payload = input.payload as {
      messageId?: unknown;
      text?: unknown;
      receivedAtMs?: unknown;
      attachments?: unknown;
    } | null;
    if (typeof payload?.messageId !== "string" || typeof payload.text !== "string") continue;
    const files = uploadedFiles(payload.attachments);
    entries.push({
      messageId: payload.messageId,
      role: "user",
      text: payload.text,
      atMs: typeof payload.receivedAtMs === "number" ? payload.receivedAtMs : input.atMs,
      ...(files.length > 0 ? { files } : {}),
    });
  }
  for (const record of records) {
    const ids = record.receipt?.messageIds ?? [];
    // A message record shows its rendered chunks, one message each; a stream shows its latest text.
    const texts = record.kind === "message" && record.rendered ? record.rendered.chunks : [record.markdown];
    // Buttons (an approval prompt's) sit under the last message; a later record that edits it in
    // place has the same message id, so it replaces the entry, buttons and all, when loaded.
    const buttons = record.kind === "message" ? record.presentation?.buttons : undefined;
    // A media record's file went with its first message (the caption, or an empty one).
    const media = record.kind === "message" ? record.media : null;
    const file =
      media === null
        ? undefined
        : webFileOf({
            id: media.blobId,
            name: media.filename,
            mimeType: media.mimeType,
            sizeBytes: media.sizeBytes,
          });
    ids.forEach((messageId, index) => {
      const text = texts[index];
      if (text === undefined) return;
      entries.push({
        messageId,
        role: "assistant",
        text,
        atMs: record.createdAtMs + index,
        ...(buttons && index === ids.length - 1 ? { buttons } : {}),
        ...(file && index === 0 ? { files: [file] } : {}),
      });
    });
  }
  return entries.sort((a, b) => a.atMs - b.atMs || (a.role === b.role ? 0 : a.role === "user" ? -1 : 1));
}

/**
 * The files a recorded web message carried: its uploads, with the type sniffed when they were
 * uploaded (an attachment recorded without one is shown as a download).
 */
function uploadedFiles(attachments: unknown): WebFile[] {
  if (!Array.isArray(attachments)) return [];
  return attachments.flatMap(
    (a: { ref?: unknown; name?: unknown; mediaType?: unknown; sizeBytes?: unknown }) =>
      typeof a?.ref === "string" && a.ref.startsWith(UPLOAD_REF_PREFIX)
        ? [
            webFileOf({
              id: a.ref.slice(UPLOAD_REF_PREFIX.length),
              name: typeof a.name === "string" ? a.name : "file",
              mimeType: typeof a.mediaType === "string" ? a.mediaType : "application/octet-stream",
              sizeBytes: typeof a.sizeBytes === "number" ? a.sizeBytes : 0,
            }),
          ]
        : [],
  );
}
