import type { APIAttachment, APIMessage, APIUser } from "discord.js";
import { type SnowflakeGenerator, snowflakeTimeMs } from "./snowflake.ts";

/** Discord channel type numbers on the wire. */
export const CHANNEL_TYPE = { text: 0, dm: 1, thread: 11 } as const;

export type EmulatedChannel =
  | { kind: "dm"; id: string; recipientId: string }
  | { kind: "text"; id: string; guildId: string; name: string }
  | {
      kind: "thread";
      id: string;
      guildId: string;
      parentId: string;
      name: string;
      ownerId: string;
      memberIds: Set<string>;
    };

/** A MESSAGE_CREATE payload: the REST message plus the gateway-only fields. */
export type GatewayMessage = APIMessage & {
  guild_id?: string;
  channel_type?: number;
  member?: { roles: string[]; joined_at: string; deaf: boolean; mute: boolean; flags: number };
};

export interface StoredMessage {
  message: GatewayMessage;
  /** The nonce the creator sent, if any (REST creates only). */
  nonce?: string;
  deleted: boolean;
  /** Files uploaded with it (multipart), with their bytes. */
  uploads?: Array<{ filename: string; contentType: string; bytes: Uint8Array }>;
}

export interface UserMessageOptions {
  /** Puts the bot in `mentions` and prefixes the content with `<@bot>`. */
  mentionBot?: boolean;
  /** Id of a message in the same channel this one replies to. */
  replyTo?: string;
  /** Files on the message, as MESSAGE_CREATE carries them (the emulator serves their `url`). */
  attachments?: APIAttachment[];
  /** The author's role ids in the guild (`member.roles`); e.g. the guild's `memberRoleId`. */
  roles?: string[];
}

/** Users, one guild with its channels and threads, DM channels and every message: the emulator's state. */
export class World {
  readonly users = new Map<string, APIUser>();
  readonly channels = new Map<string, EmulatedChannel>();
  readonly guildId: string;
  /** A role of the guild besides @everyone ("Member"), which user messages may carry. */
  readonly memberRoleId: string;
  readonly guildName = "Switchboard Test Guild";
  private readonly messagesById = new Map<string, StoredMessage>();
  private readonly messagesByChannel = new Map<string, StoredMessage[]>();

  constructor(
    private readonly ids: SnowflakeGenerator,
    private readonly now: () => number,
    readonly bot: APIUser,
  ) {
    this.users.set(bot.id, bot);
    this.guildId = ids.next();
    this.memberRoleId = ids.next();
  }

  createUser(username: string, options: { bot?: boolean } = {}): APIUser {
    const user: APIUser = {
      id: this.ids.next(),
      username,
      global_name: username,
      discriminator: "0",
      avatar: null,
      ...(options.bot ? { bot: true } : {}),
    };
    this.users.set(user.id, user);
    return user;
  }

  requireUser(id: string): APIUser {
    const user = this.users.get(id);
    if (!user) throw new Error(`Discord emulator: no user ${id}; create it with createUser() first.`);
    return user;
  }

  createTextChannel(name: string): EmulatedChannel & { kind: "text" } {
    const channel = { kind: "text" as const, id: this.ids.next(), guildId: this.guildId, name };
    this.channels.set(channel.id, channel);
    return channel;
  }

  createThread(options: {
    parentId: string;
    name: string;
    ownerId: string;
    botIsMember: boolean;
  }): EmulatedChannel & { kind: "thread" } {
    const parent = this.channels.get(options.parentId);
    if (parent?.kind !== "text") {
      throw new Error(`Discord emulator: thread parent ${options.parentId} is not a guild text channel.`);
    }
    const memberIds = new Set([options.ownerId]);
    if (options.botIsMember) memberIds.add(this.bot.id);
    const thread = {
      kind: "thread" as const,
      id: this.ids.next(),
      guildId: this.guildId,
      parentId: parent.id,
      name: options.name,
      ownerId: options.ownerId,
      memberIds,
    };
    this.channels.set(thread.id, thread);
    return thread;
  }

  /** The DM channel between the bot and `userId`, created on first use like Discord does. */
  dmChannelFor(userId: string): EmulatedChannel & { kind: "dm" } {
    for (const channel of this.channels.values()) {
      if (channel.kind === "dm" && channel.recipientId === userId) return channel;
    }
    const channel = { kind: "dm" as const, id: this.ids.next(), recipientId: userId };
    this.channels.set(channel.id, channel);
    return channel;
  }

  /** A message written by a user (or another bot) in `channelId`, stored as visible. */
  addUserMessage(
    channelId: string,
    authorId: string,
    content: string,
    options: UserMessageOptions = {},
  ): GatewayMessage {
    const channel = this.channels.get(channelId);
    if (!channel) throw new Error(`Discord emulator: no channel ${channelId}.`);
    const author = this.requireUser(authorId);
    const mentions = options.mentionBot ? [this.bot] : [];
    const text = options.mentionBot ? `<@${this.bot.id}> ${content}` : content;
    const message = this.buildMessage(channel, author, text, mentions, options.replyTo);
    if (options.attachments) message.attachments = options.attachments;
    if (options.roles && message.member) message.member.roles = options.roles;
    this.store({ message, deleted: false });
    return message;
  }

  /** A message the bot created through REST. */
  addBotMessage(channel: EmulatedChannel, content: string, nonce?: string, replyTo?: string): StoredMessage {
    const message = this.buildMessage(channel, this.bot, content, [], replyTo);
    if (nonce !== undefined) message.nonce = nonce;
    const stored: StoredMessage = { message, deleted: false, ...(nonce === undefined ? {} : { nonce }) };
    this.store(stored);
    return stored;
  }

  /** A follow-up's message as the webhook returns it; not stored (ephemeral ones are never in history). */
  buildEphemeral(channel: EmulatedChannel, content: string, flags: number): GatewayMessage {
    const message = this.buildMessage(channel, this.bot, content, [], undefined);
    message.flags = flags;
    message.webhook_id = this.bot.id;
    return message;
  }

  message(id: string): StoredMessage | undefined {
    return this.messagesById.get(id);
  }

  /** Messages of `channelId` that are still visible, oldest first, with edits applied. */
  visibleMessages(channelId: string): GatewayMessage[] {
    return (this.messagesByChannel.get(channelId) ?? []).filter((m) => !m.deleted).map((m) => m.message);
  }

  channelPayload(channel: EmulatedChannel): Record<string, unknown> {
    switch (channel.kind) {
      case "dm":
        return {
          id: channel.id,
          type: CHANNEL_TYPE.dm,
          last_message_id: null,
          recipients: [this.requireUser(channel.recipientId)],
        };
      case "text":
        return {
          id: channel.id,
          type: CHANNEL_TYPE.text,
          guild_id: channel.guildId,
          name: channel.name,
          position: 0,
          permission_overwrites: [],
          nsfw: false,
          topic: null,
          parent_id: null,
          rate_limit_per_user: 0,
          last_message_id: null,
        };
      case "thread":
        return {
          id: channel.id,
          type: CHANNEL_TYPE.thread,
          guild_id: channel.guildId,
          parent_id: channel.parentId,
          owner_id: channel.ownerId,
          name: channel.name,
          last_message_id: null,
          rate_limit_per_user: 0,
          message_count: 0,
          member_count: channel.memberIds.size,
          thread_metadata: {
            archived: false,
            auto_archive_duration: 1440,
            archive_timestamp: new Date(this.now()).toISOString(),
            locked: false,
          },
          // Discord includes `member` (the bot's own thread membership) only for joined threads.
          ...(channel.memberIds.has(this.bot.id)
            ? { member: { join_timestamp: new Date(this.now()).toISOString(), flags: 0 } }
            : {}),
        };
    }
  }

  /** The GUILD_CREATE dispatch body: the guild with its text channels, threads and the bot as member. */
  guildCreatePayload(): Record<string, unknown> {
    const channels = [...this.channels.values()];
    return {
      id: this.guildId,
      name: this.guildName,
      icon: null,
      owner_id: this.bot.id,
      unavailable: false,
      large: false,
      member_count: 1,
      roles: [
        {
          id: this.guildId,
          name: "@everyone",
          permissions: "68608", // VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
        },
        {
          id: this.memberRoleId,
          name: "Member",
          permissions: "0",
          position: 1,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
        },
      ],
      emojis: [],
      stickers: [],
      features: [],
      members: [
        {
          user: this.bot,
          roles: [],
          joined_at: new Date(this.now()).toISOString(),
          deaf: false,
          mute: false,
        },
      ],
      channels: channels.filter((c) => c.kind === "text").map((c) => this.channelPayload(c)),
      threads: channels.filter((c) => c.kind === "thread").map((c) => this.channelPayload(c)),
      voice_states: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      joined_at: new Date(this.now()).toISOString(),
    };
  }

  private buildMessage(
    channel: EmulatedChannel,
    author: APIUser,
    content: string,
    mentions: APIUser[],
    replyTo: string | undefined,
  ): GatewayMessage {
    const referenced = replyTo === undefined ? undefined : this.messagesById.get(replyTo);
    const id = this.ids.next();
    const message: GatewayMessage = {
      id,
      channel_id: channel.id,
      author,
      content,
      // As on Discord, the creation time is the one the id encodes (a second clock read can differ).
      timestamp: new Date(snowflakeTimeMs(id)).toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mention_roles: [],
      mentions,
      attachments: [],
      embeds: [],
      pinned: false,
      type: referenced ? 19 : 0, // 19 = Reply, 0 = Default
      components: [],
      channel_type: CHANNEL_TYPE[channel.kind],
    };
    if (referenced) {
      message.message_reference = {
        type: 0,
        message_id: referenced.message.id,
        channel_id: channel.id,
        ...(channel.kind === "dm" ? {} : { guild_id: channel.guildId }),
      };
      message.referenced_message = referenced.message;
    }
    if (channel.kind !== "dm") {
      message.guild_id = channel.guildId;
      message.member = {
        roles: [],
        joined_at: new Date(this.now()).toISOString(),
        deaf: false,
        mute: false,
        flags: 0,
      };
    }
    return message;
  }

  private store(stored: StoredMessage): void {
    this.messagesById.set(stored.message.id, stored);
    const list = this.messagesByChannel.get(stored.message.channel_id) ?? [];
    list.push(stored);
    this.messagesByChannel.set(stored.message.channel_id, list);
  }
}
