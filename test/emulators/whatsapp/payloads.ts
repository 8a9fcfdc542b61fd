/**
 * Webhook bodies as the Cloud API sends them: `{ object: "whatsapp_business_account", entry: [{
 * id: <WABA id>, changes: [{ field: "messages", value: { messaging_product, metadata, contacts?,
 * messages?, statuses? } }] }] }`. Builders only: the emulator decides what to send and when.
 */
import { createHash } from "node:crypto";
import type { StatusError } from "./graph-errors.ts";

export interface BusinessNumber {
  /** The WhatsApp Business Account id: `entry[].id`. */
  wabaId: string;
  phoneNumberId: string;
  /** Digits only, as `metadata.display_phone_number` carries it. */
  displayPhoneNumber: string;
}

export interface WebhookContact {
  profile: { name: string };
  wa_id: string;
}

/** A user's message as `value.messages[]` carries it; the content field is named by `type`. */
export interface WebhookMessage {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  context?: { from: string; id: string };
  [content: string]: unknown;
}

export type OutboundStatus = "sent" | "delivered" | "read" | "failed";

export interface WebhookStatus {
  id: string;
  status: OutboundStatus;
  timestamp: string;
  recipient_id: string;
  biz_opaque_callback_data?: string;
  conversation?: { id: string; expiration_timestamp?: string; origin: { type: string } };
  pricing?: { billable: boolean; pricing_model: string; category: string };
  errors?: StatusError[];
}

export interface ChangeValue {
  messaging_product: "whatsapp";
  metadata: { display_phone_number: string; phone_number_id: string };
  contacts?: WebhookContact[];
  messages?: WebhookMessage[];
  statuses?: WebhookStatus[];
}

export interface WebhookBody {
  object: "whatsapp_business_account";
  entry: Array<{ id: string; changes: Array<{ value: ChangeValue; field: "messages" }> }>;
}

/** One `entry` with one `messages` change per value: how Meta batches what it has pending. */
export function webhookBody(number: BusinessNumber, values: ChangeValue[]): WebhookBody {
  return {
    object: "whatsapp_business_account",
    entry: [{ id: number.wabaId, changes: values.map((value) => ({ value, field: "messages" })) }],
  };
}

export function changeValue(
  number: BusinessNumber,
  content: { contacts?: WebhookContact[]; messages?: WebhookMessage[]; statuses?: WebhookStatus[] },
): ChangeValue {
  return {
    messaging_product: "whatsapp",
    metadata: { display_phone_number: number.displayPhoneNumber, phone_number_id: number.phoneNumberId },
    ...content,
  };
}

let wamidCounter = 0;

/** A message id shaped like Meta's (`wamid.` + base64); opaque to clients. */
export function newWamid(waId: string): string {
  wamidCounter += 1;
  const inner = `\u0018\u000b${waId}\u0015\u0002\u0000\u0012\u0018\u0014EMU${wamidCounter.toString(16).toUpperCase().padStart(17, "0")}\u0000`;
  return `wamid.${Buffer.from(inner, "latin1").toString("base64")}`;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function secondsString(ms: number): string {
  return String(Math.floor(ms / 1000));
}

/** The `conversation` and `pricing` objects Meta adds to sent and delivered statuses. */
export function billingOf(
  conversationId: string,
  category: "service" | "utility" | "marketing",
  expiresAtMs: number,
  withExpiry: boolean,
): Pick<WebhookStatus, "conversation" | "pricing"> {
  return {
    conversation: {
      id: conversationId,
      ...(withExpiry ? { expiration_timestamp: secondsString(expiresAtMs) } : {}),
      origin: { type: category },
    },
    pricing: { billable: true, pricing_model: "CBP", category },
  };
}
