/**
 * What a user can send a business, as a test writes it (`{ from, text }`, `{ from, image }`, …),
 * turned into the `messages[]` item the Cloud API would deliver. Media bytes are stored by the
 * caller, which hands back the media id the payload names.
 */
import { newWamid, secondsString, type WebhookMessage } from "./payloads.ts";

export interface MediaSpec {
  bytes: Uint8Array;
  mimeType: string;
  /** Documents carry their file name. */
  filename?: string;
}

export interface ContactCard {
  name: string;
  phones?: string[];
  emails?: string[];
  company?: string;
}

export type IncomingContent =
  | { text: string }
  | { image: MediaSpec; caption?: string }
  | { document: MediaSpec; caption?: string }
  /** `voice: true` for a voice note recorded in WhatsApp (OGG/Opus). */
  | { audio: MediaSpec; voice?: boolean }
  | { video: MediaSpec; caption?: string }
  | { sticker: MediaSpec; animated?: boolean }
  | { location: { latitude: number; longitude: number; name?: string; address?: string; url?: string } }
  | { contacts: ContactCard[] }
  /** A reply button of an interactive message was tapped; `replyTo` names that message. */
  | { buttonReply: { id: string; title: string } }
  | { listReply: { id: string; title: string; description?: string } }
  /** A quick-reply button of a template was tapped. */
  | { templateButton: { payload: string; text: string } }
  /** `emoji: ""` removes the user's reaction. */
  | { reaction: { messageId: string; emoji: string } }
  /** A kind the Cloud API does not support (Meta sends `type: "unsupported"` with an error). */
  | { unsupported: true };

export type IncomingSpec = IncomingContent & {
  /** The user's wa_id: international number, digits only. */
  from: string;
  /** Profile name in `contacts[]`; default "Test User". */
  name?: string;
  /** The message this one replies to (`context.id`). */
  replyTo?: string;
  /** Milliseconds since epoch for `timestamp`; default the emulator's now. */
  atMs?: number;
  /** The message id; default a fresh wamid. */
  id?: string;
};

/** Stores media bytes and returns the id and hash the payload names. */
export type StoreMedia = (media: MediaSpec) => { id: string; sha256: string };

export function buildIncoming(
  spec: IncomingSpec,
  business: { displayPhoneNumber: string },
  storeMedia: StoreMedia,
  nowMs: number,
): WebhookMessage {
  const base = {
    from: spec.from,
    id: spec.id ?? newWamid(spec.from),
    timestamp: secondsString(spec.atMs ?? nowMs),
  };
  const context =
    spec.replyTo === undefined ? {} : { context: { from: business.displayPhoneNumber, id: spec.replyTo } };
  const media = (m: MediaSpec, extra: Record<string, unknown>) => {
    const stored = storeMedia(m);
    return { mime_type: m.mimeType, sha256: stored.sha256, id: stored.id, ...extra };
  };
  if ("text" in spec) return { ...base, ...context, type: "text", text: { body: spec.text } };
  if ("image" in spec)
    return { ...base, ...context, type: "image", image: media(spec.image, captionOf(spec.caption)) };
  if ("document" in spec) {
    const filename = spec.document.filename === undefined ? {} : { filename: spec.document.filename };
    return {
      ...base,
      ...context,
      type: "document",
      document: media(spec.document, { ...captionOf(spec.caption), ...filename }),
    };
  }
  if ("audio" in spec)
    return { ...base, ...context, type: "audio", audio: media(spec.audio, { voice: spec.voice ?? false }) };
  if ("video" in spec)
    return { ...base, ...context, type: "video", video: media(spec.video, captionOf(spec.caption)) };
  if ("sticker" in spec)
    return { ...base, type: "sticker", sticker: media(spec.sticker, { animated: spec.animated ?? false }) };
  if ("location" in spec) return { ...base, ...context, type: "location", location: spec.location };
  if ("contacts" in spec)
    return { ...base, ...context, type: "contacts", contacts: spec.contacts.map(contactCard) };
  if ("buttonReply" in spec)
    return {
      ...base,
      ...context,
      type: "interactive",
      interactive: { type: "button_reply", button_reply: spec.buttonReply },
    };
  if ("listReply" in spec)
    return {
      ...base,
      ...context,
      type: "interactive",
      interactive: { type: "list_reply", list_reply: spec.listReply },
    };
  if ("templateButton" in spec) return { ...base, ...context, type: "button", button: spec.templateButton };
  if ("reaction" in spec) {
    const emoji = spec.reaction.emoji === "" ? {} : { emoji: spec.reaction.emoji };
    return { ...base, type: "reaction", reaction: { message_id: spec.reaction.messageId, ...emoji } };
  }
  return {
    ...base,
    type: "unsupported",
    errors: [
      {
        code: 131051,
        title: "Message type unknown",
        message: "Message type unknown",
        error_data: { details: "Message type is currently not supported." },
      },
    ],
  };
}

function captionOf(caption: string | undefined): { caption?: string } {
  return caption === undefined ? {} : { caption };
}

function contactCard(card: ContactCard): Record<string, unknown> {
  const [first, ...rest] = card.name.split(" ");
  return {
    name: {
      formatted_name: card.name,
      first_name: first ?? card.name,
      ...(rest.length ? { last_name: rest.join(" ") } : {}),
    },
    ...(card.phones
      ? { phones: card.phones.map((phone) => ({ phone, wa_id: phone.replace(/\D/g, ""), type: "CELL" })) }
      : {}),
    ...(card.emails ? { emails: card.emails.map((email) => ({ email, type: "WORK" })) } : {}),
    ...(card.company ? { org: { company: card.company } } : {}),
  };
}
