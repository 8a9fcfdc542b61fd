import { SwitchboardError } from "../../src/errors.ts";

/**
 * The opaque keys only this adapter encodes and decodes.
 *
 * conversationKey: `wa:<phone number id>:dm:<wa_id>` (one conversation per user and number)
 * replyTarget:     `<wa_id>` (the user's number, digits only, as the Cloud API's `to` takes it)
 *
 * Both ids are digits, so ":" never occurs inside a part.
 */

/** The business number id a conversation key belongs to; null for a key of another shape. */
export function accountOfWhatsAppKey(key: string): string | null {
  return /^wa:(\d+):dm:/.exec(key)?.[1] ?? null;
}

export function dmConversationKey(phoneNumberId: string, waId: string): string {
  return `wa:${phoneNumberId}:dm:${waId}`;
}

export function encodeReplyTarget(waId: string): string {
  return waId;
}

/** Throws SwitchboardError("input_invalid") for a target this adapter did not make. */
export function decodeReplyTarget(target: string): string {
  if (!/^\d{5,20}$/.test(target)) {
    throw new SwitchboardError(
      "input_invalid",
      `"${target}" is not a WhatsApp reply target; expected a wa_id (5 to 20 digits) as made by the WhatsApp adapter`,
    );
  }
  return target;
}
