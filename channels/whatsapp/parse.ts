/**
 * One received WhatsApp message → the inbound shape every channel produces, a reaction note, or a
 * reason to skip it. Pure and SDK-free; never throws.
 *
 * - text, captions and template quick-reply buttons → `text`;
 * - image, document, audio (voice notes as `voice`), video and sticker (as a photo) → attachments
 *   whose `ref` is the media id, downloaded after admission through `GET /{media-id}`;
 * - location and contact cards → text;
 * - interactive button and list replies → a button press (`action`), as approvals use them;
 * - a reaction → a note on the conversation, not a message (no run);
 * - a reply (`context.id`) → `replyTo`, and the quoted text in front of the message when the
 *   adapter still knows it (the webhook carries only the id).
 */
import type { InboundAttachment, InboundMessage } from "../types.ts";
import { dmConversationKey, encodeReplyTarget } from "./keys.ts";
import type { ReceivedMessage, WhatsAppMessage } from "./webhook-schema.ts";

/** An inbound message without its channel, which the adapter adds. */
export type WhatsAppInbound = Omit<InboundMessage, "channel">;

export interface ParseContext {
  /** The business phone number id this adapter serves: its account. */
  account: string;
  /** The text of an earlier message by its wamid, when the adapter still knows it (to quote replies). */
  quotedText?: (messageId: string) => string | undefined;
}

/** A user reacted to a message (or removed a reaction): a note for the conversation, not an input. */
export interface ReactionNote {
  /** `reaction:<wamid of the reaction>`: unique per reaction event, for deduplication. */
  updateKey: string;
  conversationKey: string;
  principal: { id: string; name?: string; isBot: false };
  /** The wamid of the message reacted to. */
  messageId: string;
  /** The emoji, or null when the user removed their reaction. */
  emoji: string | null;
  receivedAtMs: number;
  /** One line for the conversation's history, e.g. `Alice reacted 👍 to a message`. */
  note: string;
}

export type SkipReason =
  /** Sent to another number of the same app (one callback URL serves them all). */
  | "other_number"
  /** A kind this channel does not read: system, order, unsupported, … */
  | "unsupported_type";

export type ParseOutcome =
  | { kind: "message"; message: WhatsAppInbound }
  | { kind: "reaction"; reaction: ReactionNote }
  | { kind: "skip"; reason: SkipReason; detail?: string };

/** The longest quotation put in front of a reply; the rest is cut with "…". */
export const MAX_QUOTE_CHARS = 500;

export function parseWhatsAppMessage(received: ReceivedMessage, context: ParseContext): ParseOutcome {
  if (received.phoneNumberId !== context.account) return { kind: "skip", reason: "other_number" };
  if (!received.message.known)
    return { kind: "skip", reason: "unsupported_type", detail: received.message.value.type };
  const message = received.message.value;
  const principal =
    received.senderName === undefined
      ? { id: message.from, isBot: false as const }
      : { id: message.from, name: received.senderName, isBot: false as const };
  const conversationKey = dmConversationKey(context.account, message.from);
  const receivedAtMs = Number(message.timestamp) * 1000;

  if (message.type === "reaction") {
    const emoji = message.reaction.emoji || null;
    const who = received.senderName ?? message.from;
    return {
      kind: "reaction",
      reaction: {
        updateKey: `reaction:${message.id}`,
        conversationKey,
        principal,
        messageId: message.reaction.message_id,
        emoji,
        receivedAtMs,
        note:
          emoji === null
            ? `${who} removed their reaction to a message`
            : `${who} reacted ${emoji} to a message`,
      },
    };
  }

  const content = contentOf(message);
  const replyTo = message.context?.id;
  const quoted = replyTo === undefined ? undefined : context.quotedText?.(replyTo);
  const inbound: WhatsAppInbound = {
    account: context.account,
    updateKey: message.id,
    principal,
    conversationKey,
    replyTarget: encodeReplyTarget(message.from),
    surface: "dm",
    where: { chat: message.from },
    text: content.action || quoted === undefined ? content.text : withQuote(quoted, content.text),
    messageId: content.action && replyTo !== undefined ? replyTo : message.id,
    addressedToBot: true,
    attachments: content.attachments,
    receivedAtMs,
  };
  if (replyTo !== undefined && !content.action) inbound.replyTo = replyTo;
  if (content.action) inbound.action = { data: content.action.slice(0, 200), interactionId: message.id };
  return { kind: "message", message: inbound };
}

interface Content {
  text: string;
  attachments: InboundAttachment[];
  /** A pressed button's or chosen list row's id. */
  action?: string;
}

function contentOf(message: Exclude<WhatsAppMessage, { type: "reaction" }>): Content {
  switch (message.type) {
    case "text":
      return { text: message.text.body, attachments: [] };
    case "image":
      return media(message.image, "photo");
    case "sticker":
      return media(message.sticker, "photo");
    case "document":
      return media(message.document, "file");
    case "video":
      return media(message.video, "video");
    case "audio":
      return media(message.audio, message.audio.voice ? "voice" : "audio");
    case "location":
      return { text: locationText(message.location), attachments: [] };
    case "contacts":
      return { text: message.contacts.map(contactText).join("\n"), attachments: [] };
    case "interactive": {
      const reply =
        message.interactive.type === "button_reply"
          ? message.interactive.button_reply
          : message.interactive.list_reply;
      return { text: "", attachments: [], action: reply.id };
    }
    case "button":
      return { text: message.button.text, attachments: [] };
  }
}

function media(
  file: { id: string; mime_type?: string; caption?: string; filename?: string },
  kind: InboundAttachment["kind"],
): Content {
  const attachment: InboundAttachment = { kind, ref: file.id };
  if (file.mime_type !== undefined) attachment.mediaType = file.mime_type;
  if (file.filename !== undefined) attachment.name = file.filename;
  return { text: file.caption ?? "", attachments: [attachment] };
}

function locationText(location: Extract<WhatsAppMessage, { type: "location" }>["location"]): string {
  const place = [location.name, location.address].filter(Boolean).join(", ");
  const coordinates = `${location.latitude}, ${location.longitude}`;
  const url = location.url ? ` ${location.url}` : "";
  return `Location: ${place ? `${place} (${coordinates})` : coordinates}${url}`;
}

function contactText(card: Extract<WhatsAppMessage, { type: "contacts" }>["contacts"][number]): string {
  const parts = [
    card.name?.formatted_name,
    ...(card.phones ?? []).map((p) => p.phone),
    ...(card.emails ?? []).map((e) => e.email),
    card.org?.company,
  ].filter((part): part is string => Boolean(part));
  return `Contact: ${parts.length > 0 ? parts.join(", ") : "(empty card)"}`;
}

/** The quoted message as a Markdown quote in front of the reply, so the model sees what it answers. */
function withQuote(quoted: string, text: string): string {
  const cut = quoted.length > MAX_QUOTE_CHARS ? `${quoted.slice(0, MAX_QUOTE_CHARS)}…` : quoted;
  const quote = cut
    .split("\n")
    .map((line) => `> ${line}`)
    .join("\n");
  return text === "" ? quote : `${quote}\n\n${text}`;
}
