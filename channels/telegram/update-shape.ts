/**
 * The parts of a Bot API update that parse.ts reads, checked before it reads them. Telegram only
 * sends well-formed updates, but a webhook is reachable by anyone holding (or guessing around) the
 * secret, and a buggy proxy can mangle a body: a malformed update must become a skip, never an
 * exception that makes the update be retried forever and stall the ones behind it.
 * Objects stay loose: Telegram adds fields with every Bot API version.
 */
import { z } from "zod";

const id = z.number().int().refine(Number.isSafeInteger, "not a safe integer");
const positiveId = id.refine((n) => n > 0, "not positive");
const unixSeconds = z.number().int().nonnegative().max(32_503_680_000);

const file = z.looseObject({
  file_id: z.string().min(1),
  file_name: z.string().optional(),
  mime_type: z.string().optional(),
  file_size: z.number().nonnegative().optional(),
  duration: z.number().nonnegative().optional(),
});

const person = z.looseObject({
  id,
  is_bot: z.boolean(),
  first_name: z.string(),
  last_name: z.string().optional(),
  username: z.string().optional(),
});

const entity = z
  .looseObject({
    type: z.string(),
    offset: z.number().int().nonnegative(),
    length: z.number().int().nonnegative(),
    user: z.looseObject({ id }).optional(),
  })
  .refine((e) => e.type !== "text_mention" || e.user !== undefined, "a text_mention names no user");

const messageShape = z.looseObject({
  message_id: positiveId,
  date: unixSeconds,
  edit_date: unixSeconds.optional(),
  chat: z.looseObject({
    id,
    type: z.enum(["private", "group", "supergroup", "channel"]),
    title: z.string().optional(),
    first_name: z.string().optional(),
  }),
  from: person.optional(),
  sender_chat: z
    .looseObject({ id, title: z.string().optional(), first_name: z.string().optional() })
    .optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  entities: z.array(entity).optional(),
  caption_entities: z.array(entity).optional(),
  is_topic_message: z.boolean().optional(),
  message_thread_id: positiveId.optional(),
  reply_to_message: z
    .looseObject({ message_id: positiveId, from: z.looseObject({ id }).optional() })
    .optional(),
  photo: z
    .array(
      z.looseObject({
        file_id: z.string().min(1),
        width: z.number().nonnegative(),
        height: z.number().nonnegative(),
        file_size: z.number().nonnegative().optional(),
      }),
    )
    .optional(),
  animation: file.optional(),
  document: file.optional(),
  voice: file.optional(),
  audio: file.extend({ title: z.string().optional() }).optional(),
  video: file.optional(),
  video_note: file.optional(),
  sticker: z
    .looseObject({
      file_id: z.string().min(1),
      is_animated: z.boolean().optional(),
      is_video: z.boolean().optional(),
      emoji: z.string().optional(),
      file_size: z.number().nonnegative().optional(),
    })
    .optional(),
});

/** Null when `message` has the shape parse.ts relies on, else the first offending field. */
export function messageShapeProblem(message: unknown): string | null {
  const result = messageShape.safeParse(message);
  if (result.success) return null;
  const issue = result.error.issues[0];
  return `${issue?.path.join(".") || "(message)"}: ${issue?.message ?? "invalid"}`;
}
