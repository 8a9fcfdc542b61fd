/** zod schemas of the conversation API's bodies and answers; the OpenAPI document is made from them. */
import { z } from "zod";
import { CHANNEL_NAMES, isBlank, MAX_INBOUND_ATTACHMENTS } from "../../../channels/types.ts";

/** A client's key for one request: a repeat with it is the same request. */
const idempotencyKey = z
  .string({ error: "required: a key of yours naming this request, so a retry is not a second one" })
  .regex(/^[A-Za-z0-9._:-]{1,200}$/, "use 1-200 characters of A-Z a-z 0-9 . _ : -");

const text = (maxChars: number) =>
  z
    .string({ error: "expected the message text" })
    .refine((value) => !isBlank(value), "the text is empty (only spaces or invisible characters)")
    .refine((value) => value.length <= maxChars, `longer than ${maxChars} characters; shorten or split it`);

/** Nothing yet: the conversation's settings come from the `api:dm` surface. */
export const createConversationBody = z.strictObject({});

export const attachmentSchema = z.strictObject({
  url: z
    .url({ protocol: /^https$/, error: "expected an https:// URL the gateway can download the file from" })
    .max(2000, "longer than 2000 characters"),
  name: z.string().min(1).max(200).optional(),
  mediaType: z.string().min(1).max(200).optional(),
});

export function messageBody(maxChars: number) {
  return z
    .strictObject({
      text: text(maxChars).optional(),
      attachments: z
        .array(attachmentSchema)
        .max(MAX_INBOUND_ATTACHMENTS, `at most ${MAX_INBOUND_ATTACHMENTS} attachments`)
        .optional(),
      idempotencyKey,
    })
    .refine((body) => body.text !== undefined || (body.attachments?.length ?? 0) > 0, {
      message: "send text, attachments or both",
      path: ["text"],
    });
}

export function sendBody(maxChars: number) {
  return z.strictObject({
    channel: z.enum(CHANNEL_NAMES.filter((name) => name !== "api") as [string, ...string[]], {
      error: `expected one of ${CHANNEL_NAMES.filter((name) => name !== "api").join(", ")}`,
    }),
    account: z.string().min(1).max(200).optional(),
    target: z
      .string({ error: "expected the chat's reply target as the channel writes it (see docs/api.md)" })
      .min(1)
      .max(500),
    text: text(maxChars),
    idempotencyKey,
  });
}

export const conversationCreated = z.object({
  conversationId: z.string(),
  channel: z.literal("api"),
  surface: z.literal("api:dm"),
});

export const messageAccepted = z.object({
  outcome: z.enum(["admitted", "duplicate"]),
  runId: z.string(),
  conversationId: z.string(),
  /** Where the run's events stream. */
  events: z.string(),
});

export const sendAccepted = z.object({
  outcome: z.enum(["enqueued", "duplicate"]),
  outboxId: z.string(),
  state: z.enum(["pending", "sending", "delivered", "failed", "ambiguous", "cancelled"]),
});

export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
