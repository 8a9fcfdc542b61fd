/**
 * Reply targets: `<chat_id>` or `<chat_id>:<message_thread_id>` (forum topics). Opaque to the
 * core; only this adapter makes and reads them.
 */
import { SwitchboardError } from "../../src/errors.ts";

export interface TelegramTarget {
  chatId: number;
  /** Forum topic (or private-chat topic) the answer belongs in. */
  threadId?: number;
}

export function encodeTarget(target: TelegramTarget): string {
  return target.threadId === undefined ? String(target.chatId) : `${target.chatId}:${target.threadId}`;
}

export function decodeTarget(encoded: string): TelegramTarget {
  const match = /^(-?\d+)(?::(\d+))?$/.exec(encoded);
  const chatId = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(chatId)) {
    throw new SwitchboardError(
      "input_invalid",
      `Not a Telegram reply target: "${encoded}" (expected <chat_id> or <chat_id>:<thread_id>, as made by the Telegram adapter)`,
    );
  }
  return match[2] === undefined ? { chatId } : { chatId, threadId: Number(match[2]) };
}

/** Telegram message ids are positive integers; the core carries them as strings. */
export function decodeMessageId(messageId: string): number {
  const id = Number(messageId);
  if (!/^\d+$/.test(messageId) || !Number.isSafeInteger(id) || id <= 0) {
    throw new SwitchboardError("input_invalid", `Not a Telegram message id: "${messageId}"`);
  }
  return id;
}
