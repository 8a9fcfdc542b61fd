import {
  type ButtonInteraction,
  ChannelType,
  type ChatInputCommandInteraction,
  type Message,
} from "discord.js";
import type { InboundAttachment, InboundMessage, InboundWhere, SurfaceKind } from "../types.ts";
import type { DiscordConfig } from "./config.ts";
import { conversationKey, encodeTarget } from "./keys.ts";

/**
 * What switchboard needs from one Discord message, read off discord.js once so the rules below
 * are plain functions of plain data.
 */
export interface DiscordMessageFacts {
  id: string;
  channelId: string;
  /** "channel" is any guild text channel that is not a thread. */
  place: "dm" | "channel" | "thread";
  /** Who and where, for bindings: the server, a thread's parent channel, the author's role ids. */
  guildId?: string;
  parentChannelId?: string;
  roleIds?: string[];
  author: { id: string; name: string; isBot: boolean };
  /** Join messages, pins, boosts …: not something a person wrote. */
  isSystem: boolean;
  content: string;
  /** Users mentioned with <@id>, by id → display name. */
  mentionedUsers: Map<string, string>;
  /** Id of the message this one replies to and that message's author, when known. */
  replyTo?: { messageId: string; authorId?: string };
  /** For threads: the bot created the thread or is one of its members (as the gateway told us). */
  botOwnsOrJoinedThread: boolean;
  attachments: InboundAttachment[];
  createdAtMs: number;
}

export type SkipReason = "own_message" | "bot_author" | "system_message" | "empty" | "unsupported_channel";

export type ParseResult = { kind: "message"; message: InboundMessage } | { kind: "skip"; reason: SkipReason };

export interface ParseContext {
  /** The bot's user id; also the account part of conversation keys. */
  botUserId: string;
  groupSessions: DiscordConfig["groupSessions"];
  allowBots: boolean;
}

const THREAD_TYPES = new Set([
  ChannelType.PublicThread,
  ChannelType.PrivateThread,
  ChannelType.AnnouncementThread,
]);

/** Reads a discord.js message; `null` for channels switchboard does not serve (group DMs). */
export function readMessage(message: Message, botUserId: string): DiscordMessageFacts | null {
  const channel = message.channel;
  if (channel.type === ChannelType.GroupDM) return null;
  const place =
    channel.type === ChannelType.DM ? "dm" : THREAD_TYPES.has(channel.type) ? "thread" : "channel";
  const botOwnsOrJoinedThread =
    channel.isThread() && (channel.ownerId === botUserId || channel.members.cache.has(botUserId));
  const reference = message.reference?.messageId;
  const guildId = message.guildId ?? undefined;
  const parentChannelId = channel.isThread() ? (channel.parentId ?? undefined) : undefined;
  return {
    id: message.id,
    channelId: message.channelId,
    place,
    ...(guildId === undefined ? {} : { guildId }),
    ...(parentChannelId === undefined ? {} : { parentChannelId }),
    ...(message.member ? { roleIds: roleIdsOf([...message.member.roles.cache.keys()], guildId) } : {}),
    author: {
      id: message.author.id,
      name: message.author.globalName ?? message.author.username,
      isBot: message.author.bot,
    },
    isSystem: message.system,
    content: message.content,
    mentionedUsers: new Map(
      message.mentions.users.map((user) => [user.id, user.globalName ?? user.username]),
    ),
    ...(reference === undefined
      ? {}
      : {
          replyTo: {
            messageId: reference,
            ...(message.mentions.repliedUser ? { authorId: message.mentions.repliedUser.id } : {}),
          },
        }),
    botOwnsOrJoinedThread,
    attachments: [
      ...message.attachments.map((a) => toAttachment(a.url, a.name, a.contentType, a.size, a.duration)),
      ...message.stickers.map(
        (sticker): InboundAttachment => ({ kind: "sticker", ref: sticker.id, name: sticker.name }),
      ),
    ],
    createdAtMs: message.createdTimestamp,
  };
}

/** Decides whether a message reaches ingress and, if so, in which conversation. */
export function toInbound(facts: DiscordMessageFacts, context: ParseContext): ParseResult {
  const { botUserId } = context;
  if (facts.author.id === botUserId) return skip("own_message");
  if (facts.author.isBot && !context.allowBots) return skip("bot_author");
  if (facts.isSystem) return skip("system_message");
  const text = readableText(facts, botUserId);
  if (text === "" && facts.attachments.length === 0) return skip("empty");

  const addressedToBot =
    facts.place === "dm" ||
    facts.mentionedUsers.has(botUserId) ||
    facts.replyTo?.authorId === botUserId ||
    (facts.place === "thread" && facts.botOwnsOrJoinedThread);

  const message: InboundMessage = {
    channel: "discord",
    account: botUserId,
    updateKey: facts.id,
    principal: { id: facts.author.id, name: facts.author.name, isBot: facts.author.isBot },
    conversationKey: conversationKey(botUserId, scopeOf(facts, context)),
    replyTarget: encodeTarget(facts.channelId),
    surface: SURFACE[facts.place],
    where: whereOf(facts),
    text,
    messageId: facts.id,
    addressedToBot,
    attachments: facts.attachments,
    receivedAtMs: facts.createdAtMs,
    ...(facts.replyTo ? { replyTo: facts.replyTo.messageId } : {}),
  };
  return { kind: "message", message };
}

/** Where bindings see a message: its channel (a thread's parent), server and the author's roles. */
function whereOf(
  facts: Pick<DiscordMessageFacts, "channelId" | "guildId" | "parentChannelId" | "roleIds">,
): InboundWhere {
  return {
    chat: facts.parentChannelId ?? facts.channelId,
    ...(facts.guildId === undefined ? {} : { guild: facts.guildId }),
    ...(facts.roleIds === undefined ? {} : { roles: facts.roleIds }),
  };
}

/** A member's role ids without @everyone (whose id is the server's), at most the inbound shape's 250. */
function roleIdsOf(ids: readonly string[], guildId: string | undefined): string[] {
  return ids.filter((id) => id !== guildId).slice(0, 250);
}

const SURFACE: Record<DiscordMessageFacts["place"], SurfaceKind> = {
  dm: "dm",
  channel: "group",
  thread: "thread",
};

function scopeOf(
  facts: Pick<DiscordMessageFacts, "place" | "channelId"> & { author: { id: string } },
  context: ParseContext,
) {
  switch (facts.place) {
    case "dm":
      return { kind: "dm" as const, userId: facts.author.id };
    case "thread":
      return { kind: "thread" as const, threadId: facts.channelId };
    case "channel":
      return context.groupSessions === "per-user"
        ? { kind: "channel" as const, channelId: facts.channelId, userId: facts.author.id }
        : { kind: "channel" as const, channelId: facts.channelId };
  }
}

/**
 * The content as a person reads it: a leading mention of the bot (how people address it) is
 * dropped and other user mentions become @name, so the model never sees raw <@123> ids.
 */
function readableText(facts: DiscordMessageFacts, botUserId: string): string {
  const withoutAddress = facts.content.replace(new RegExp(`^\\s*<@!?${botUserId}>[\\s,:]*`), "");
  return withoutAddress
    .replace(/<@!?(\d+)>/g, (raw, id: string) => {
      const name = facts.mentionedUsers.get(id);
      return name === undefined ? raw : `@${name}`;
    })
    .trim();
}

function toAttachment(
  url: string,
  name: string,
  contentType: string | null,
  sizeBytes: number,
  /** Voice messages state their length. */
  durationSeconds: number | null,
): InboundAttachment {
  const mediaType = contentType ?? undefined;
  const family = mediaType?.split("/")[0];
  const kind =
    family === "image" ? "photo" : family === "audio" ? "audio" : family === "video" ? "video" : "file";
  return {
    kind,
    ref: url,
    name,
    sizeBytes,
    ...(mediaType === undefined ? {} : { mediaType }),
    ...(durationSeconds === null ? {} : { durationSeconds }),
  };
}

function skip(reason: SkipReason): ParseResult {
  return { kind: "skip", reason };
}

/** What switchboard needs from one button press, read off discord.js once. */
export interface DiscordPressFacts {
  interactionId: string;
  customId: string;
  channelId: string;
  place: "dm" | "channel" | "thread";
  guildId?: string;
  parentChannelId?: string;
  roleIds?: string[];
  user: { id: string; name: string; isBot: boolean };
  /** The bot's message the button is under. */
  messageId: string;
  createdAtMs: number;
}

/** Reads a button interaction; `null` outside DMs, guild text channels and threads. */
export function readPress(
  interaction: ButtonInteraction | ChatInputCommandInteraction,
): DiscordPressFacts | null {
  const channelId = interaction.channelId;
  const type = interaction.channel?.type;
  if (channelId === null || type === ChannelType.GroupDM) return null;
  const place =
    interaction.guildId === null || type === ChannelType.DM
      ? "dm"
      : type !== undefined && THREAD_TYPES.has(type)
        ? "thread"
        : "channel";
  const guildId = interaction.guildId ?? undefined;
  const channel = interaction.channel;
  const parentChannelId = channel?.isThread() ? (channel.parentId ?? undefined) : undefined;
  const member = interaction.member;
  const roleIds = member
    ? Array.isArray(member.roles)
      ? member.roles
      : [...member.roles.cache.keys()]
    : undefined;
  return {
    interactionId: interaction.id,
    // A slash command (channels/discord/slash.ts) has neither; it reads the rest the same way.
    customId: interaction.isButton() ? interaction.customId : "",
    channelId,
    place,
    ...(guildId === undefined ? {} : { guildId }),
    ...(parentChannelId === undefined ? {} : { parentChannelId }),
    ...(roleIds === undefined ? {} : { roleIds: roleIdsOf(roleIds, guildId) }),
    user: {
      id: interaction.user.id,
      name: interaction.user.globalName ?? interaction.user.username,
      isBot: interaction.user.bot,
    },
    messageId: interaction.isButton() ? interaction.message.id : "",
    createdAtMs: interaction.createdTimestamp,
  };
}

/**
 * A press as an inbound message with `action` and no text, in the conversation of the chat the
 * button is under (per-user channel sessions: the presser's). The interaction id is the dedupe key.
 */
export function pressToInbound(facts: DiscordPressFacts, context: ParseContext): ParseResult {
  if (facts.user.id === context.botUserId) return skip("own_message");
  if (facts.user.isBot && !context.allowBots) return skip("bot_author");
  if (facts.customId === "") return skip("empty");
  const scope = scopeOf(
    { place: facts.place, channelId: facts.channelId, author: { id: facts.user.id } },
    context,
  );
  return {
    kind: "message",
    message: {
      channel: "discord",
      account: context.botUserId,
      updateKey: `interaction:${facts.interactionId}`,
      principal: { id: facts.user.id, name: facts.user.name, isBot: facts.user.isBot },
      conversationKey: conversationKey(context.botUserId, scope),
      replyTarget: encodeTarget(facts.channelId),
      surface: SURFACE[facts.place],
      where: whereOf(facts),
      text: "",
      messageId: facts.messageId,
      addressedToBot: true,
      attachments: [],
      receivedAtMs: facts.createdAtMs,
      action: { data: facts.customId.slice(0, 200), interactionId: facts.interactionId },
    },
  };
}

/**
 * A deleted message (MESSAGE_DELETE) as a withdrawal of it: `facts` when discord.js still had the
 * message (it arrived in this process), else only its ids. With facts the withdrawal carries the
 * message's own conversation, so the adapter hands it to ingress after that message; a message
 * the bot never admitted (its own, another bot's, a system message) is skipped. Without them its
 * author is unknown: the conversation key is the channel's, which ingress does not go by (the
 * deleted message's receipt and reply target decide).
 */
export function deletionToInbound(
  deleted: { id: string; channelId: string; guildId: string | null; facts: DiscordMessageFacts | null },
  context: ParseContext,
  nowMs: number,
): ParseResult {
  const withdrawal = {
    updateKey: `delete:${deleted.id}`,
    text: "",
    attachments: [],
    receivedAtMs: nowMs,
    withdrawn: { updateKey: deleted.id },
  };
  if (deleted.facts) {
    const original = toInbound(deleted.facts, context);
    if (original.kind === "skip") return original;
    const { replyTo: _replyTo, ...message } = original.message;
    return { kind: "message", message: { ...message, ...withdrawal } };
  }
  const place = deleted.guildId === null ? "dm" : "channel";
  return {
    kind: "message",
    message: {
      channel: "discord",
      account: context.botUserId,
      principal: { id: "unknown", isBot: false },
      conversationKey: conversationKey(context.botUserId, { kind: "channel", channelId: deleted.channelId }),
      replyTarget: encodeTarget(deleted.channelId),
      surface: SURFACE[place],
      messageId: deleted.id,
      addressedToBot: true,
      ...withdrawal,
    },
  };
}

/**
 * An edited message (MESSAGE_UPDATE) as an edit of it: its new content under the key
 * `edit:<id>:<edited at>`, so a redelivered update is a duplicate and each later edit is new.
 */
export function editToInbound(
  facts: DiscordMessageFacts,
  editedAtMs: number,
  context: ParseContext,
): ParseResult {
  const parsed = toInbound(facts, context);
  if (parsed.kind === "skip") return parsed;
  return {
    kind: "message",
    message: {
      ...parsed.message,
      updateKey: `edit:${facts.id}:${editedAtMs}`,
      receivedAtMs: editedAtMs,
      edited: { messageId: facts.id },
    },
  };
}
