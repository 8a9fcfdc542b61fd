/**
 * The Cloud API webhook body, validated with zod piece by piece: the envelope must hold (else the
 * POST is malformed, 400), but each entry, change, message and status is parsed on its own, so
 * one bad item is reported as a problem and the others still count. Imports no SDK.
 *
 * Shape: `{ object: "whatsapp_business_account", entry: [{ id, changes: [{ field: "messages",
 * value: { messaging_product, metadata: { phone_number_id, … }, contacts?, messages?, statuses?,
 * errors? } }] }] }`.
 */
import { z } from "zod";

const waId = z.string().regex(/^\d{5,20}$/, "a wa_id is 5 to 20 digits");
const messageId = z.string().min(1).max(200);
const epochSeconds = z.string().regex(/^\d{1,12}$/, "a timestamp is seconds since the epoch");
/** Names and free text pass through truncated rather than dropping the message. */
const clipped = (max: number) => z.string().transform((s) => s.slice(0, max));

const envelopeSchema = z.object({
  object: z.literal("whatsapp_business_account"),
  entry: z.array(z.unknown()),
});
const entrySchema = z.object({ id: z.string(), changes: z.array(z.unknown()) });
const changeSchema = z.object({ field: z.string(), value: z.unknown() });
const valueSchema = z.object({
  messaging_product: z.literal("whatsapp"),
  metadata: z.object({ phone_number_id: z.string().min(1).max(64) }),
  contacts: z.array(z.unknown()).optional(),
  messages: z.array(z.unknown()).optional(),
  statuses: z.array(z.unknown()).optional(),
  errors: z.array(z.unknown()).optional(),
});
const contactSchema = z.object({ wa_id: waId, profile: z.object({ name: clipped(256) }).optional() });

const errorSchema = z.object({
  code: z.number().int(),
  title: clipped(500).optional(),
  message: clipped(1000).optional(),
  error_data: z.object({ details: clipped(2000).optional() }).optional(),
});

const baseSchema = z.object({
  from: waId,
  id: messageId,
  timestamp: epochSeconds,
  type: z.string().min(1).max(64),
  context: z.object({ id: messageId, from: z.string().max(64).optional() }).optional(),
});

const mediaSchema = z.object({
  id: z.string().min(1).max(200),
  mime_type: z.string().max(200).optional(),
  sha256: z.string().max(200).optional(),
  caption: z.string().max(100_000).optional(),
  filename: clipped(500).optional(),
  voice: z.boolean().optional(),
  animated: z.boolean().optional(),
});

const contactCardSchema = z.object({
  name: z.object({ formatted_name: clipped(500) }).optional(),
  phones: z.array(z.object({ phone: clipped(64).optional(), wa_id: z.string().optional() })).optional(),
  emails: z.array(z.object({ email: clipped(320).optional() })).optional(),
  org: z.object({ company: clipped(500).optional() }).optional(),
});

const replySchema = z.object({
  id: z.string().min(1).max(256),
  title: clipped(200),
  description: clipped(500).optional(),
});

const messageSchema = z.discriminatedUnion("type", [
  baseSchema.extend({ type: z.literal("text"), text: z.object({ body: z.string().max(100_000) }) }),
  baseSchema.extend({ type: z.literal("image"), image: mediaSchema }),
  baseSchema.extend({ type: z.literal("document"), document: mediaSchema }),
  baseSchema.extend({ type: z.literal("audio"), audio: mediaSchema }),
  baseSchema.extend({ type: z.literal("video"), video: mediaSchema }),
  baseSchema.extend({ type: z.literal("sticker"), sticker: mediaSchema }),
  baseSchema.extend({
    type: z.literal("location"),
    location: z.object({
      latitude: z.number(),
      longitude: z.number(),
      name: clipped(500).optional(),
      address: clipped(1000).optional(),
      url: clipped(2000).optional(),
    }),
  }),
  baseSchema.extend({ type: z.literal("contacts"), contacts: z.array(contactCardSchema).min(1).max(50) }),
  baseSchema.extend({
    type: z.literal("interactive"),
    interactive: z.discriminatedUnion("type", [
      z.object({ type: z.literal("button_reply"), button_reply: replySchema }),
      z.object({ type: z.literal("list_reply"), list_reply: replySchema }),
    ]),
  }),
  /** A template's quick-reply button: its text, and the payload the business set. */
  baseSchema.extend({
    type: z.literal("button"),
    button: z.object({ text: clipped(1000), payload: clipped(1000).optional() }),
  }),
  baseSchema.extend({
    type: z.literal("reaction"),
    reaction: z.object({ message_id: messageId, emoji: z.string().max(64).optional() }),
  }),
]);

const KNOWN_TYPES = new Set(messageSchema.options.map((option) => option.shape.type.value));

const statusSchema = z.object({
  id: messageId,
  status: z.string().min(1).max(64),
  timestamp: epochSeconds,
  recipient_id: z.string().min(1).max(64),
  biz_opaque_callback_data: z.string().max(512).optional(),
  errors: z.array(errorSchema).optional(),
});

export type WhatsAppMessage = z.output<typeof messageSchema>;
/** A message of a kind this channel does not read (system, order, unsupported, …). */
export type OtherMessage = z.output<typeof baseSchema>;
export type WhatsAppStatus = z.output<typeof statusSchema>;
export type WhatsAppError = z.output<typeof errorSchema>;

export interface ReceivedMessage {
  /** The business number it was sent to (`metadata.phone_number_id`). */
  phoneNumberId: string;
  /** The sender's profile name from `contacts[]`, when given. */
  senderName?: string;
  message: { known: true; value: WhatsAppMessage } | { known: false; value: OtherMessage };
}

export interface ReceivedStatus {
  phoneNumberId: string;
  status: WhatsAppStatus;
}

export interface WebhookProblem {
  /** Where in the body, e.g. `entry[0].changes[1].value.messages[2]`. */
  path: string;
  problem: string;
}

export interface WebhookItems {
  messages: ReceivedMessage[];
  statuses: ReceivedStatus[];
  /** Errors Meta reports about the number or the webhook itself (`value.errors[]`). */
  errors: Array<{ phoneNumberId: string; error: WhatsAppError }>;
  /** Changes of fields other than `messages` (account updates, template reviews, …): not read. */
  otherFields: string[];
  /** Items that did not parse; each was skipped and the rest kept. */
  problems: WebhookProblem[];
}

export type WebhookReading = { ok: true; items: WebhookItems } | { ok: false; problem: string };

/** Reads a parsed JSON webhook body; `ok: false` only when the envelope itself is not Meta's. */
export function readWebhookBody(body: unknown): WebhookReading {
  const envelope = envelopeSchema.safeParse(body);
  if (!envelope.success)
    return { ok: false, problem: `not a WhatsApp webhook body (${describe(envelope.error)})` };
  const items: WebhookItems = { messages: [], statuses: [], errors: [], otherFields: [], problems: [] };
  for (const [e, rawEntry] of envelope.data.entry.entries()) {
    const entry = entrySchema.safeParse(rawEntry);
    if (!entry.success) {
      items.problems.push(problem(`entry[${e}]`, entry.error));
      continue;
    }
    for (const [c, rawChange] of entry.data.changes.entries()) {
      const path = `entry[${e}].changes[${c}]`;
      const change = changeSchema.safeParse(rawChange);
      if (!change.success) items.problems.push(problem(path, change.error));
      else if (change.data.field !== "messages") items.otherFields.push(change.data.field);
      else {
        const value = valueSchema.safeParse(change.data.value);
        if (value.success) readValue(value.data, `${path}.value`, items);
        else items.problems.push(problem(`${path}.value`, value.error));
      }
    }
  }
  return { ok: true, items };
}

function readValue(value: z.output<typeof valueSchema>, path: string, items: WebhookItems): void {
  const phoneNumberId = value.metadata.phone_number_id;
  const names = new Map<string, string>();
  for (const raw of value.contacts ?? []) {
    const contact = contactSchema.safeParse(raw);
    if (contact.success && contact.data.profile?.name)
      names.set(contact.data.wa_id, contact.data.profile.name);
  }
  for (const [m, raw] of (value.messages ?? []).entries()) {
    const received = readMessage(raw, phoneNumberId, names);
    if ("problem" in received)
      items.problems.push({ path: `${path}.messages[${m}]`, problem: received.problem });
    else items.messages.push(received);
  }
  for (const [i, raw] of (value.statuses ?? []).entries()) {
    const status = statusSchema.safeParse(raw);
    if (status.success) items.statuses.push({ phoneNumberId, status: status.data });
    else items.problems.push(problem(`${path}.statuses[${i}]`, status.error));
  }
  for (const [i, raw] of (value.errors ?? []).entries()) {
    const error = errorSchema.safeParse(raw);
    if (error.success) items.errors.push({ phoneNumberId, error: error.data });
    else items.problems.push(problem(`${path}.errors[${i}]`, error.error));
  }
}

function readMessage(
  raw: unknown,
  phoneNumberId: string,
  names: Map<string, string>,
): ReceivedMessage | { problem: string } {
  const base = baseSchema.safeParse(raw);
  if (!base.success) return { problem: describe(base.error) };
  const senderName = names.get(base.data.from);
  const named = senderName === undefined ? {} : { senderName };
  if (!KNOWN_TYPES.has(base.data.type as WhatsAppMessage["type"])) {
    return { phoneNumberId, ...named, message: { known: false, value: base.data } };
  }
  const message = messageSchema.safeParse(raw);
  if (!message.success) return { problem: describe(message.error) };
  return { phoneNumberId, ...named, message: { known: true, value: message.data } };
}

function problem(path: string, error: z.ZodError): WebhookProblem {
  return { path, problem: describe(error) };
}

/** The first issue, with its path: enough for a log line, never the whole body. */
function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const at = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${at}${issue.message}`;
}
