/**
 * The browser's POST body → an InboundMessage. Pure; the route does the I/O. The body carries the
 * session id (the page's only key to its transcript); the message carries only the user id derived
 * from it (user-id.ts), so the session id is never stored, logged or shown.
 */
import { z } from "zod";
import { type InboundMessage, isBlank } from "../types.ts";

export const WEB_ACCOUNT = "local";

/** Files one web message may carry. */
export const MAX_FILES_PER_MESSAGE = 10;

/** Random ids the page makes (crypto.getRandomValues): URL-safe, long enough not to be guessed. */
const SESSION_ID = /^[A-Za-z0-9_-]{16,128}$/;
const CLIENT_MESSAGE_ID = /^[A-Za-z0-9_-]{8,128}$/;

export function isSessionId(value: string): boolean {
  return SESSION_ID.test(value);
}

export function webMessageBodySchema(maxMessageChars: number) {
  return z
    .object({
      sessionId: z.string().regex(SESSION_ID, "sessionId must be 16-128 characters of A-Z a-z 0-9 _ -"),
      clientMessageId: z
        .string()
        .regex(CLIENT_MESSAGE_ID, "clientMessageId must be 8-128 characters of A-Z a-z 0-9 _ -"),
      text: z
        .string()
        .refine(
          (text) => !isBlank(text),
          "text is empty (only spaces or invisible characters); type a message",
        )
        .refine(
          (text) => text.length <= maxMessageChars,
          `text is longer than ${maxMessageChars} characters; shorten it or split it`,
        )
        .optional(),
      /** A pressed button's data, instead of text. */
      action: z.string().min(1).max(200, "action is longer than 200 characters").optional(),
      /** Files uploaded first (POST /web/api/uploads), by the id the upload answered. */
      files: z
        .array(
          z.object({
            uploadId: z.string().regex(/^[0-9a-f]{64}$/, "uploadId must be the id an upload answered"),
            name: z.string().min(1).max(200, "name is longer than 200 characters"),
          }),
        )
        .min(1)
        .max(MAX_FILES_PER_MESSAGE, `at most ${MAX_FILES_PER_MESSAGE} files per message`)
        .optional(),
    })
    .refine(
      (body) =>
        body.action === undefined
          ? body.text !== undefined || body.files !== undefined
          : body.text === undefined && body.files === undefined,
      {
        message:
          "send either text and/or files (a message) or action (a pressed button's data), not both or neither",
        path: ["text"],
      },
    );
}

export type WebMessageBody = z.infer<ReturnType<typeof webMessageBodySchema>>;

/** The conversation of the web user `userId` (the id derived from the session, never the session id). */
export function conversationKeyFor(userId: string): string {
  return `web:${WEB_ACCOUNT}:dm:${userId}`;
}

/**
 * `userId` is the id derived from `body.sessionId` (user-id.ts); nothing of the message holds the
 * session id itself. The principal is the user id alone: the gateway labels it `web:<user id>`, as
 * it labels `telegram:<user id>`. The update key is scoped by user: a retried POST (same
 * clientMessageId) dedupes, while an id reused by another browser cannot swallow that browser's
 * message.
 */
export function toInboundMessage(
  body: WebMessageBody,
  userId: string,
  receivedAtMs: number,
  uploadOf: (uploadId: string) => { sizeBytes: number; mimeType: string } | undefined = () => undefined,
): InboundMessage {
  return {
    channel: "web",
    account: WEB_ACCOUNT,
    updateKey: `${userId}:${body.clientMessageId}`,
    principal: { id: userId, isBot: false },
    conversationKey: conversationKeyFor(userId),
    replyTarget: userId,
    surface: "dm",
    text: body.text ?? "",
    messageId: body.clientMessageId,
    addressedToBot: true,
    attachments: (body.files ?? []).map((file) => {
      const upload = uploadOf(file.uploadId);
      return {
        kind: "file" as const,
        ref: `upload:${file.uploadId}`,
        name: file.name,
        ...(upload ? { sizeBytes: upload.sizeBytes, mediaType: upload.mimeType } : {}),
      };
    }),
    receivedAtMs,
    ...(body.action === undefined
      ? {}
      : { action: { data: body.action, interactionId: body.clientMessageId } }),
  };
}
