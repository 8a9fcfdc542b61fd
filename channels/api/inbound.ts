/**
 * A conversation API message → an InboundMessage. Pure; the HTTP route authenticates the caller,
 * checks the conversation is theirs and validates the body first.
 */
import type { InboundMessage } from "../types.ts";
import { API_ACCOUNT, type ApiOwner, conversationKeyFor, replyTargetFor } from "./keys.ts";

/** What the route hands over: the body's fields, validated. */
export interface ApiMessage {
  text: string;
  attachments: Array<{ url: string; name?: string; mediaType?: string }>;
  /** The client's key for this message: a repeat is the same message (one run). */
  idempotencyKey: string;
}

/**
 * The update key is the conversation's ref and the client's key, so one key names one message of
 * one conversation (the ingress receipt's identity), and two conversations never collide.
 */
export function toInboundMessage(
  message: ApiMessage,
  conversation: { owner: ApiOwner; ref: string },
  receivedAtMs: number,
): InboundMessage {
  const { owner, ref } = conversation;
  return {
    channel: "api",
    account: API_ACCOUNT,
    updateKey: `${ref}:${message.idempotencyKey}`,
    principal: { id: owner, isBot: false },
    conversationKey: conversationKeyFor(owner, ref),
    replyTarget: replyTargetFor(owner, ref),
    surface: "dm",
    text: message.text,
    messageId: message.idempotencyKey,
    addressedToBot: true,
    attachments: message.attachments.map((file) => ({
      kind: "file" as const,
      ref: file.url,
      ...(file.name ? { name: file.name } : {}),
      ...(file.mediaType ? { mediaType: file.mediaType } : {}),
    })),
    receivedAtMs,
  };
}
