import type { ChannelAdapter } from "../channels/types.ts";
import { PlatformCallError, type PlatformCaller } from "./platform-call.ts";
import { isNotModified } from "./render.ts";
import type { RenderedText } from "./types.ts";

/** Shown when a stream's text is withdrawn but its message cannot be deleted. */
export const WITHDRAWN_PLACEHOLDER = "…";

/** The platform messages a streamed reply occupies: one per chunk, in order. */
export interface ShownMessages {
  messageIds: string[];
  /** What each message is known to show; undefined when unknown (after a restart): edit it anyway. */
  texts: (string | undefined)[];
  /** Idempotency keys this reply has sent with. */
  usedKeys: Set<string>;
}

export interface SyncMessagesOptions {
  adapter: ChannelAdapter;
  target: string;
  replyTo: string | null;
  /** Stable base of idempotency keys; chunk i is sent with `${base}#${i}`. */
  idempotencyKeyBase: string;
  call: PlatformCaller;
  /** Persists the message ids after each send or delete, so a crash never forgets a visible message. */
  onProgress(messageIds: string[]): Promise<void>;
}

/**
 * Makes the chat show `desired`, one message per chunk: edits messages whose text differs, sends
 * the missing ones in order, and deletes surplus ones from the end (or blanks them when the
 * platform cannot delete). Mutates `shown` as it goes, so a failure part-way leaves it accurate.
 */
export async function syncMessages(
  shown: ShownMessages,
  desired: RenderedText,
  options: SyncMessagesOptions,
): Promise<void> {
  const { adapter, target } = options;
  for (const [index, text] of desired.chunks.entries()) {
    const message = {
      text,
      format: desired.format,
      idempotencyKey: `${options.idempotencyKeyBase}#${index}`,
    };
    const messageId = shown.messageIds[index];
    if (messageId === undefined) {
      // A message deleted and later needed again must not reuse its key: an idempotent platform
      // would answer with the deleted message.
      let key = message.idempotencyKey;
      for (let resend = 1; shown.usedKeys.has(key); resend++) key = `${message.idempotencyKey}.${resend}`;
      shown.usedKeys.add(key);
      message.idempotencyKey = key;
      const replyTo = index === 0 && options.replyTo !== null ? options.replyTo : undefined;
      const receipt = await options.call("send", () =>
        adapter.send(target, replyTo === undefined ? message : { ...message, replyTo }),
      );
      shown.messageIds.push(...receipt.messageIds);
      shown.texts[index] = text;
      await options.onProgress([...shown.messageIds]);
    } else if (shown.texts[index] !== text) {
      await editMessage(options, messageId, message);
      shown.texts[index] = text;
    }
  }
  const canDelete = adapter.delete !== undefined;
  for (let index = shown.messageIds.length - 1; index >= desired.chunks.length; index--) {
    const messageId = shown.messageIds[index]!;
    if (canDelete) {
      await options.call("delete", () => adapter.delete!(target, messageId));
      shown.messageIds.splice(index, 1);
      shown.texts.splice(index, 1);
      await options.onProgress([...shown.messageIds]);
    } else if (shown.texts[index] !== WITHDRAWN_PLACEHOLDER) {
      // Cannot delete: the blanked message stays part of the reply.
      await editMessage(options, messageId, {
        text: WITHDRAWN_PLACEHOLDER,
        format: "plain",
        idempotencyKey: `${options.idempotencyKeyBase}#${index}`,
      });
      shown.texts[index] = WITHDRAWN_PLACEHOLDER;
    }
  }
}

async function editMessage(
  options: SyncMessagesOptions,
  messageId: string,
  message: { text: string; format: "rich" | "plain"; idempotencyKey: string },
): Promise<void> {
  const { adapter, target } = options;
  if (!adapter.edit) {
    throw new Error(`The ${adapter.channel} adapter cannot edit messages; a streamed reply needs edit().`);
  }
  try {
    await options.call("edit", () => adapter.edit!(target, messageId, message));
  } catch (error) {
    if (!isNotModified(error instanceof PlatformCallError ? error.cause : error)) throw error;
  }
}
