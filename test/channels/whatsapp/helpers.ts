import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type ReceivedMessage,
  readWebhookBody,
  type WebhookItems,
} from "../../../channels/whatsapp/webhook-schema.ts";

export const ACCOUNT = "106540352242922";
export const USER = "16505551234";

/** A recorded webhook body from fixtures/<name>.json. */
export function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(import.meta.dir, "fixtures", `${name}.json`), "utf8"));
}

export function itemsOf(body: unknown): WebhookItems {
  const reading = readWebhookBody(body);
  if (!reading.ok) throw new Error(`expected a readable webhook body: ${reading.problem}`);
  return reading.items;
}

/** The one message in a fixture. */
export function receivedOf(name: string): ReceivedMessage {
  const { messages, problems } = itemsOf(fixture(name));
  if (messages.length !== 1 || problems.length > 0)
    throw new Error(`fixture ${name}: ${messages.length} messages, problems ${JSON.stringify(problems)}`);
  return messages[0]!;
}
