/**
 * Builders for realistic Bot API objects (users, chats, messages, updates), shaped like what
 * Telegram sends: entities computed the way the server computes them, forum-topic messages with
 * their implicit reply to the topic's creation message, reply_to_message without nested replies.
 */
import type { Chat, Message, MessageEntity, Update, User } from "grammy/types";

export type TgUser = User;
export type TgChat = Chat;
export type TgMessage = Message;

export function user(id: number, firstName: string, extra: Partial<User> = {}): User {
  return { id, is_bot: false, first_name: firstName, ...extra };
}

export function botUser(id: number, username: string, firstName = username): User {
  return { id, is_bot: true, first_name: firstName, username };
}

export function privateChat(of: User): Chat.PrivateChat {
  return {
    id: of.id,
    type: "private",
    first_name: of.first_name,
    ...(of.last_name === undefined ? {} : { last_name: of.last_name }),
    ...(of.username === undefined ? {} : { username: of.username }),
  };
}

export function groupChat(id: number, title: string): Chat.GroupChat {
  return { id, type: "group", title };
}

export function supergroupChat(
  id: number,
  title: string,
  options: { isForum?: boolean } = {},
): Chat.SupergroupChat {
  return { id, type: "supergroup", title, ...(options.isForum ? { is_forum: true as const } : {}) };
}

/** Entities the Telegram server attaches by itself: @mentions and /commands (UTF-16 offsets). */
export function detectEntities(text: string): MessageEntity[] {
  const entities: MessageEntity[] = [];
  for (const match of text.matchAll(
    /(^|[\s(])(@[A-Za-z][A-Za-z0-9_]{3,31}|\/[A-Za-z0-9_]{1,32}(?:@[A-Za-z][A-Za-z0-9_]{3,31})?)/g,
  )) {
    const token = match[2] ?? "";
    const offset = (match.index ?? 0) + (match[1]?.length ?? 0);
    entities.push({ type: token.startsWith("@") ? "mention" : "bot_command", offset, length: token.length });
  }
  return entities;
}

export interface MessageSpec {
  chat: Chat;
  from: User;
  messageId: number;
  dateSeconds?: number;
  /** Text message body; `entities` default to those the server would detect. */
  text?: string;
  entities?: MessageEntity[];
  /** Media captions; `captionEntities` default like `entities`. */
  caption?: string;
  captionEntities?: MessageEntity[];
  media?: MediaSpec;
  /** An explicit reply. Its own reply_to_message is stripped, as Telegram does. */
  replyTo?: Message;
  /** Forum topic: the topic's thread id (the id of its forum_topic_created service message). */
  topic?: { threadId: number; name: string; createdBy?: User };
  senderChat?: Chat;
}

export type MediaSpec =
  | { kind: "photo"; fileId: string; sizes?: { width: number; height: number; fileSize: number }[] }
  | { kind: "document"; fileId: string; fileName: string; mimeType: string; fileSize: number }
  | { kind: "voice"; fileId: string; durationSeconds: number; mimeType?: string; fileSize?: number }
  | {
      kind: "audio";
      fileId: string;
      durationSeconds: number;
      title?: string;
      fileName?: string;
      mimeType?: string;
    }
  | {
      kind: "video";
      fileId: string;
      width: number;
      height: number;
      durationSeconds: number;
      mimeType?: string;
    }
  | { kind: "sticker"; fileId: string; emoji?: string };

export function message(spec: MessageSpec): Message {
  const msg: Record<string, unknown> = {
    message_id: spec.messageId,
    from: spec.from,
    chat: spec.chat,
    date: spec.dateSeconds ?? Math.floor(Date.now() / 1000),
  };
  if (spec.senderChat) msg.sender_chat = spec.senderChat;
  if (spec.text !== undefined) {
    msg.text = spec.text;
    const entities = spec.entities ?? detectEntities(spec.text);
    if (entities.length > 0) msg.entities = entities;
  }
  if (spec.caption !== undefined) {
    msg.caption = spec.caption;
    const entities = spec.captionEntities ?? detectEntities(spec.caption);
    if (entities.length > 0) msg.caption_entities = entities;
  }
  if (spec.media) Object.assign(msg, mediaFields(spec.media));
  if (spec.topic) {
    msg.message_thread_id = spec.topic.threadId;
    msg.is_topic_message = true;
    // Telegram links every topic message to the topic's creation message unless it is an explicit reply.
    msg.reply_to_message = spec.replyTo
      ? withoutNestedReply(spec.replyTo)
      : topicCreatedMessage(
          spec.chat,
          spec.topic.threadId,
          spec.topic.name,
          spec.topic.createdBy ?? spec.from,
        );
  } else if (spec.replyTo) {
    msg.reply_to_message = withoutNestedReply(spec.replyTo);
  }
  return msg as unknown as Message;
}

export function topicCreatedMessage(chat: Chat, threadId: number, name: string, createdBy: User): Message {
  return {
    message_id: threadId,
    message_thread_id: threadId,
    from: createdBy,
    chat,
    date: Math.floor(Date.now() / 1000) - 3600,
    forum_topic_created: { name, icon_color: 7322096 },
    is_topic_message: true,
  } as unknown as Message;
}

function withoutNestedReply(replied: Message): Message {
  const { reply_to_message: _nested, ...rest } = replied as Message & { reply_to_message?: unknown };
  return rest as Message;
}

function mediaFields(media: MediaSpec): Record<string, unknown> {
  const unique = `${media.fileId}-unique`;
  switch (media.kind) {
    case "photo": {
      const sizes = media.sizes ?? [
        { width: 90, height: 60, fileSize: 1_200 },
        { width: 320, height: 213, fileSize: 14_000 },
        { width: 1280, height: 853, fileSize: 120_000 },
      ];
      return {
        photo: sizes.map((size, index) => ({
          file_id: `${media.fileId}-${index}`,
          file_unique_id: `${unique}-${index}`,
          width: size.width,
          height: size.height,
          file_size: size.fileSize,
        })),
      };
    }
    case "document":
      return {
        document: {
          file_id: media.fileId,
          file_unique_id: unique,
          file_name: media.fileName,
          mime_type: media.mimeType,
          file_size: media.fileSize,
        },
      };
    case "voice":
      return {
        voice: {
          file_id: media.fileId,
          file_unique_id: unique,
          duration: media.durationSeconds,
          mime_type: media.mimeType ?? "audio/ogg",
          ...(media.fileSize === undefined ? {} : { file_size: media.fileSize }),
        },
      };
    case "audio":
      return {
        audio: {
          file_id: media.fileId,
          file_unique_id: unique,
          duration: media.durationSeconds,
          ...(media.title === undefined ? {} : { title: media.title }),
          ...(media.fileName === undefined ? {} : { file_name: media.fileName }),
          mime_type: media.mimeType ?? "audio/mpeg",
        },
      };
    case "video":
      return {
        video: {
          file_id: media.fileId,
          file_unique_id: unique,
          width: media.width,
          height: media.height,
          duration: media.durationSeconds,
          mime_type: media.mimeType ?? "video/mp4",
        },
      };
    case "sticker":
      return {
        sticker: {
          file_id: media.fileId,
          file_unique_id: unique,
          type: "regular",
          width: 512,
          height: 512,
          is_animated: false,
          is_video: false,
          ...(media.emoji === undefined ? {} : { emoji: media.emoji }),
        },
      };
  }
}

/** An update without update_id; the emulator (or the test) assigns one. */
export type UpdateBody = Omit<Update, "update_id"> & { update_id?: number };

export function messageUpdate(msg: Message, updateId?: number): UpdateBody {
  return { ...(updateId === undefined ? {} : { update_id: updateId }), message: msg } as UpdateBody;
}

/** The edited_message update Telegram sends after `msg` was edited to `newText`. */
export function editedMessageUpdate(msg: Message, newText: string, editDateSeconds: number): UpdateBody {
  const isCaption = (msg as { caption?: string }).caption !== undefined;
  const {
    entities: _oldEntities,
    caption_entities: _oldCaptionEntities,
    ...rest
  } = msg as Message & {
    entities?: unknown;
    caption_entities?: unknown;
  };
  const entities = detectEntities(newText);
  const edited = {
    ...rest,
    edit_date: editDateSeconds,
    ...(isCaption ? { caption: newText } : { text: newText }),
    ...(entities.length === 0 ? {} : isCaption ? { caption_entities: entities } : { entities }),
  };
  return { edited_message: edited } as UpdateBody;
}

/** The kind of an update: its single key other than update_id ("message", "callback_query" …). */
export function updateKind(update: UpdateBody): string {
  return Object.keys(update).find((key) => key !== "update_id") ?? "unknown";
}
