/**
 * Update → InboundMessage, or a reason to skip it. Pure: no network, no grammY runtime, never
 * throws on an unknown shape.
 */
import type { CallbackQuery, Message, MessageEntity, Update } from "grammy/types";
import type { InboundAttachment, InboundMessage, SurfaceKind } from "../types.ts";
import { encodeTarget } from "./target.ts";
import { messageShapeProblem } from "./update-shape.ts";

/** Longest sender name passed on; Telegram caps names at 64 characters, a forged update may not. */
const MAX_NAME_CHARS = 256;

export interface ParseContext {
  /** The bot's user id as a string (the adapter's account). */
  account: string;
  botId: number;
  /** Without the leading @. */
  botUsername: string;
  groupSessions: "shared" | "per-user";
}

export type ParseResult = { kind: "message"; message: InboundMessage } | { kind: "skip"; reason: string };

export function parseUpdate(update: Update, context: ParseContext): ParseResult {
  if (typeof update !== "object" || update === null || Array.isArray(update))
    return skip("not an update object");
  if (!Number.isSafeInteger(update.update_id)) return skip("update without an integer update_id");
  if (update.message) {
    const problem = messageShapeProblem(update.message);
    if (problem) return skip(`malformed message (${problem})`);
    return parseMessage(update.message, String(update.update_id), context);
  }
  if (update.edited_message) {
    const edited = update.edited_message;
    const problem = messageShapeProblem(edited);
    if (problem) return skip(`malformed edited message (${problem})`);
    const editKey = `edit:${edited.chat.id}:${edited.message_id}:${edited.edit_date}`;
    const parsed = parseMessage(edited, editKey, context);
    if (parsed.kind === "message") parsed.message.edited = { messageId: String(edited.message_id) };
    return parsed;
  }
  if (update.callback_query)
    return parseCallbackQuery(update.callback_query, String(update.update_id), context);
  const kind = Object.keys(update).find((key) => key !== "update_id") ?? "empty";
  return skip(`unsupported update kind "${kind}"`);
}

function parseMessage(msg: Message, updateKey: string, context: ParseContext): ParseResult {
  const chat = msg.chat;
  if (chat.type === "channel") return skip("channel post");
  const text = msg.text ?? msg.caption ?? "";
  const attachments = attachmentsOf(msg);
  if (text === "" && attachments.length === 0)
    return skip(`message without text or media (${contentKind(msg)})`);

  const principal = principalOf(msg);
  if (!principal) return skip("message without a sender");

  const threadId = msg.is_topic_message ? msg.message_thread_id : undefined;
  const surface: SurfaceKind = chat.type === "private" ? "dm" : threadId !== undefined ? "thread" : "group";
  const entities = msg.entities ?? msg.caption_entities ?? [];
  const reply = explicitReplyOf(msg, threadId);

  const roomKey =
    chat.type === "private"
      ? `tg:${context.account}:dm:${principal.id}`
      : `tg:${context.account}:chat:${chat.id}`;
  let conversationKey = roomKey;
  if (threadId !== undefined) conversationKey += `:topic:${threadId}`;
  if (chat.type !== "private" && context.groupSessions === "per-user")
    conversationKey += `:user:${principal.id}`;

  const addressedToBot =
    chat.type === "private" ||
    mentionsBot(text, entities, context) ||
    (reply !== undefined && reply.from?.id === context.botId);

  return {
    kind: "message",
    message: {
      channel: "telegram",
      account: context.account,
      updateKey,
      principal,
      conversationKey,
      // A topic or a per-user session is one conversation of the group, its room.
      ...(conversationKey === roomKey ? {} : { roomKey }),
      replyTarget: encodeTarget(threadId === undefined ? { chatId: chat.id } : { chatId: chat.id, threadId }),
      surface,
      where: { chat: String(chat.id) },
      text,
      ...(reply ? { replyTo: String(reply.message_id) } : {}),
      messageId: String(msg.message_id),
      addressedToBot,
      attachments,
      receivedAtMs: (msg.edit_date ?? msg.date) * 1000,
    },
  };
}

/**
 * A press of an inline button under one of the bot's messages: the same inbound shape as a
 * message, with `action` (the button's data and the query id the adapter answers) and no text.
 * Its conversation is the chat of the message the button is under.
 */
function parseCallbackQuery(query: CallbackQuery, updateKey: string, context: ParseContext): ParseResult {
  if (typeof query !== "object" || query === null) return skip("malformed callback query");
  const msg = query.message;
  if (typeof query.id !== "string" || query.id === "" || query.id.length > 300)
    return skip("callback query without a valid id");
  if (typeof query.data !== "string" || query.data === "") return skip("callback query without data");
  if (!msg || typeof msg.chat !== "object" || !Number.isSafeInteger(msg.chat?.id))
    return skip("callback query without its message");
  const from = query.from;
  if (!from || !Number.isSafeInteger(from.id)) return skip("callback query without a sender");
  const chat = msg.chat;
  const threadId =
    "is_topic_message" in msg && msg.is_topic_message ? (msg as Message).message_thread_id : undefined;
  const surface: SurfaceKind = chat.type === "private" ? "dm" : threadId !== undefined ? "thread" : "group";
  const roomKey =
    chat.type === "private" ? `tg:${context.account}:dm:${chat.id}` : `tg:${context.account}:chat:${chat.id}`;
  let conversationKey = roomKey;
  if (threadId !== undefined) conversationKey += `:topic:${threadId}`;
  if (chat.type !== "private" && context.groupSessions === "per-user") conversationKey += `:user:${from.id}`;
  const fullName = [from.first_name, from.last_name].filter(Boolean).join(" ");
  const name = (fullName || from.username)?.slice(0, MAX_NAME_CHARS);
  return {
    kind: "message",
    message: {
      channel: "telegram",
      account: context.account,
      updateKey,
      principal:
        name === undefined
          ? { id: String(from.id), isBot: from.is_bot }
          : { id: String(from.id), name, isBot: from.is_bot },
      conversationKey,
      // A topic or a per-user session is one conversation of the group, its room.
      ...(conversationKey === roomKey ? {} : { roomKey }),
      replyTarget: encodeTarget(threadId === undefined ? { chatId: chat.id } : { chatId: chat.id, threadId }),
      surface,
      where: { chat: String(chat.id) },
      text: "",
      messageId: String(msg.message_id),
      addressedToBot: true,
      attachments: [],
      receivedAtMs: (msg.date ?? 0) * 1000,
      action: { data: query.data.slice(0, 200), interactionId: query.id },
    },
  };
}

function skip(reason: string): ParseResult {
  return { kind: "skip", reason };
}

function principalOf(msg: Message): InboundMessage["principal"] | null {
  // Anonymous group admins and linked channels speak as a chat; `from` is then a placeholder bot.
  const senderChat = msg.sender_chat;
  if (senderChat) {
    const name = (senderChat.title ?? senderChat.first_name)?.slice(0, MAX_NAME_CHARS);
    return name === undefined
      ? { id: String(senderChat.id), isBot: false }
      : { id: String(senderChat.id), name, isBot: false };
  }
  const from = msg.from;
  if (!from) return null;
  const fullName = [from.first_name, from.last_name].filter(Boolean).join(" ");
  const name = (fullName || from.username)?.slice(0, MAX_NAME_CHARS);
  return name === undefined
    ? { id: String(from.id), isBot: from.is_bot }
    : { id: String(from.id), name, isBot: from.is_bot };
}

/**
 * In a forum topic every message carries reply_to_message = the topic's creation message, even
 * when the user did not reply to anything; only a reply to another message is a real reply.
 */
function explicitReplyOf(msg: Message, threadId: number | undefined): Message | undefined {
  const reply = msg.reply_to_message;
  if (!reply) return undefined;
  if (threadId !== undefined && reply.message_id === threadId) return undefined;
  return reply as Message;
}

function mentionsBot(text: string, entities: MessageEntity[], context: ParseContext): boolean {
  const username = context.botUsername.toLowerCase();
  return entities.some((entity) => {
    const fragment = text.slice(entity.offset, entity.offset + entity.length);
    switch (entity.type) {
      case "mention":
        return fragment.toLowerCase() === `@${username}`;
      case "text_mention":
        return entity.user.id === context.botId;
      case "bot_command": {
        // A bare /command in a group is delivered only to bots it may concern; /command@other is not ours.
        const at = fragment.indexOf("@");
        return at === -1 || fragment.slice(at + 1).toLowerCase() === username;
      }
      default:
        return false;
    }
  });
}

function attachmentsOf(msg: Message): InboundAttachment[] {
  const attachments: InboundAttachment[] = [];
  const photo = msg.photo;
  if (photo && photo.length > 0) {
    const largest = photo.reduce((best, size) =>
      size.width * size.height > best.width * best.height ? size : best,
    );
    attachments.push({
      kind: "photo",
      ref: largest.file_id,
      mediaType: "image/jpeg",
      ...(largest.file_size === undefined ? {} : { sizeBytes: largest.file_size }),
    });
  }
  const animation = msg.animation;
  if (animation) {
    attachments.push(fileAttachment("video", animation));
  } else if (msg.document) {
    // Animations also carry a `document` copy of themselves; only a plain document is a file.
    attachments.push(fileAttachment("file", msg.document));
  }
  if (msg.voice) attachments.push(fileAttachment("voice", msg.voice));
  if (msg.audio) {
    const audio = msg.audio;
    attachments.push(fileAttachment("audio", { ...audio, file_name: audio.file_name ?? audio.title }));
  }
  if (msg.video) attachments.push(fileAttachment("video", msg.video));
  if (msg.video_note) attachments.push(fileAttachment("video", msg.video_note));
  if (msg.sticker) {
    const sticker = msg.sticker;
    const mediaType = sticker.is_animated
      ? "application/x-tgsticker"
      : sticker.is_video
        ? "video/webm"
        : "image/webp";
    attachments.push({
      kind: "sticker",
      ref: sticker.file_id,
      mediaType,
      ...(sticker.emoji === undefined ? {} : { name: sticker.emoji }),
      ...(sticker.file_size === undefined ? {} : { sizeBytes: sticker.file_size }),
    });
  }
  return attachments;
}

interface FileLike {
  file_id: string;
  file_name?: string;
  mime_type?: string;
  file_size?: number;
  duration?: number;
}

function fileAttachment(kind: InboundAttachment["kind"], file: FileLike): InboundAttachment {
  return {
    kind,
    ref: file.file_id,
    ...(file.file_name === undefined ? {} : { name: file.file_name }),
    ...(file.mime_type === undefined ? {} : { mediaType: file.mime_type }),
    ...(file.file_size === undefined ? {} : { sizeBytes: file.file_size }),
    ...(file.duration === undefined ? {} : { durationSeconds: file.duration }),
  };
}

/** A short name for what a message without text or media carries (for skip reasons). */
function contentKind(msg: Message): string {
  const known = Object.keys(msg).filter(
    (key) =>
      ![
        "message_id",
        "from",
        "chat",
        "date",
        "sender_chat",
        "message_thread_id",
        "is_topic_message",
      ].includes(key),
  );
  return known[0] ?? "empty";
}
