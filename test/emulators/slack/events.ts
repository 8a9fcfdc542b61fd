import { randomBytes, randomUUID } from "node:crypto";
import type { EventCallbackBody, SlackEvent, SlackIdentity } from "./types.ts";

/** Slack message timestamps ("1700000000.000100"): unique and increasing within one generator. */
export function createTsGenerator(now: () => number = Date.now): () => string {
  let lastMicros = 0;
  return () => {
    lastMicros = Math.max(now() * 1000, lastMicros + 1);
    const seconds = Math.floor(lastMicros / 1_000_000);
    const micros = String(lastMicros % 1_000_000).padStart(6, "0");
    return `${seconds}.${micros}`;
  };
}

/** A Slack-looking event id: "Ev" + 10 upper-case alphanumerics. */
export function newEventId(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bytes = randomBytes(10);
  let id = "Ev";
  for (const byte of bytes) id += alphabet[byte % alphabet.length];
  return id;
}

export interface SlackFileInput {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  /** Where the file downloads; default a files.slack.com URL (see SlackEmulator.hostFile). */
  url_private?: string;
  /** Audio and video clips state their length. */
  duration_ms?: number;
}

interface MessageInput {
  user: string;
  text: string;
  channel: string;
  ts?: string;
  threadTs?: string;
  files?: SlackFileInput[];
}

export interface DmInput extends Omit<MessageInput, "channel"> {
  /** The DM channel id (D…); defaults to one derived from the user id. */
  channel?: string;
}

export interface ChannelMessageInput extends MessageInput {
  channelType?: "channel" | "group";
  /** Author of the thread's parent message (Slack sets it on thread replies). */
  parentUserId?: string;
}

export interface BotMessageInput {
  channel: string;
  text: string;
  channelType?: "im" | "channel" | "group";
  /** Another app's bot id; omit to build a message posted by this emulator's own bot. */
  botId?: string;
  ts?: string;
  threadTs?: string;
}

export interface MessageChangedInput {
  channel: string;
  channelType: "im" | "channel" | "group";
  user: string;
  /** ts of the message that was edited. */
  ts: string;
  previousText: string;
  newText: string;
  threadTs?: string;
  /** When the edit happened; defaults to a fresh ts. */
  editedTs?: string;
}

/** Builders for realistic `event_callback` bodies, bound to one workspace/app identity. */
export interface SlackEventBuilders {
  /** Wraps any event in an event_callback body with a fresh event_id. */
  callback(event: SlackEvent, eventId?: string): EventCallbackBody;
  /** A direct message to the bot (`message`, channel_type "im"). */
  dm(input: DmInput): EventCallbackBody;
  /**
   * A channel message that mentions the bot. Slack sends it twice, as `app_mention` and as the plain
   * `message`, with different event ids; both share the message ts.
   */
  channelMention(input: Omit<ChannelMessageInput, "text"> & { text?: string }): {
    appMention: EventCallbackBody;
    message: EventCallbackBody;
  };
  /** A channel message (no bot mention unless `text` has one). Set `threadTs` for a thread reply. */
  channelMessage(input: ChannelMessageInput): EventCallbackBody;
  /** A reply in a thread (`thread_ts` set, parent_user_id defaulting to the bot). */
  threadReply(input: ChannelMessageInput & { threadTs: string }): EventCallbackBody;
  /** A message posted by a bot (`subtype: "bot_message"`, `bot_id`). */
  botMessage(input: BotMessageInput): EventCallbackBody;
  /** An edit (`subtype: "message_changed"`) of an earlier message. */
  messageChanged(input: MessageChangedInput): EventCallbackBody;
  /** A person deleting an earlier message (`subtype: "message_deleted"`, naming it by `deleted_ts`). */
  messageDeleted(input: MessageDeletedInput): EventCallbackBody;
  /**
   * A user opening a thread in the app's assistant container (`assistant_thread_started`), in
   * their DM with the app; the thread's ts is fresh unless given. A message in it is
   * `dm({ user, text, threadTs })`.
   */
  assistantThreadStarted(input: AssistantThreadInput): EventCallbackBody;
  /** The user looked at another channel while the thread is open (`assistant_thread_context_changed`). */
  assistantThreadContextChanged(input: AssistantThreadInput & { threadTs: string }): EventCallbackBody;
}

export interface AssistantThreadInput {
  user: string;
  /** The DM channel id (D…); defaults to one derived from the user id, as `dm` does. */
  channel?: string;
  threadTs?: string;
  /** The channel the user is looking at, as the thread's context names it. */
  contextChannel?: string;
}

export interface MessageDeletedInput {
  channel: string;
  channelType: "im" | "channel" | "group";
  user: string;
  /** ts of the message that was deleted. */
  ts: string;
  /** Its text, as `previous_message` carries it. */
  text: string;
  threadTs?: string;
}

export function slackEventBuilders(
  identity: SlackIdentity,
  nextTs: () => string,
  built: (body: EventCallbackBody) => void = () => {},
): SlackEventBuilders {
  const enterprise = identity.enterpriseId ?? null;
  // The org's own identity (an org-wide install's org-level events): no workspace to name.
  const team = identity.teamId === enterprise ? null : identity.teamId;
  const orgWide = identity.isEnterpriseInstall === true;
  const callback = (event: SlackEvent, eventId: string = newEventId()): EventCallbackBody => {
    const body: EventCallbackBody = {
      token: "emulator-verification-token",
      team_id: team,
      ...(enterprise === null ? {} : { enterprise_id: enterprise }),
      context_team_id: team,
      context_enterprise_id: enterprise,
      api_app_id: identity.appId,
      event,
      type: "event_callback",
      event_id: eventId,
      event_time: Math.floor(Number(event.event_ts ?? event.ts ?? nextTs())),
      authorizations: [
        {
          enterprise_id: enterprise,
          team_id: team,
          user_id: identity.botUserId,
          is_bot: true,
          is_enterprise_install: orgWide,
        },
      ],
      ...(orgWide ? { is_enterprise_install: true } : {}),
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(randomUUID()).toString("base64url").slice(0, 40)}`,
    };
    built(body);
    return body;
  };

  const userMessage = (input: MessageInput, channelType: string, extra: Record<string, unknown> = {}) => {
    const ts = input.ts ?? nextTs();
    const event: SlackEvent = {
      type: "message",
      client_msg_id: randomUUID(),
      text: input.text,
      user: input.user,
      ts,
      team: identity.teamId,
      channel: input.channel,
      event_ts: ts,
      channel_type: channelType,
      ...extra,
    };
    if (input.threadTs !== undefined) event.thread_ts = input.threadTs;
    if (input.files !== undefined) {
      event.subtype = "file_share";
      event.files = input.files.map((file) => ({
        ...file,
        url_private:
          file.url_private ?? `https://files.slack.com/files-pri/${identity.teamId}-${file.id}/${file.name}`,
      }));
    }
    return event;
  };

  const assistantThreadEvent = (type: string, input: AssistantThreadInput): EventCallbackBody =>
    callback({
      type,
      assistant_thread: {
        user_id: input.user,
        context: {
          ...(input.contextChannel === undefined ? {} : { channel_id: input.contextChannel }),
          team_id: identity.teamId,
          enterprise_id: enterprise,
        },
        channel_id: input.channel ?? `D${input.user.slice(1)}`,
        thread_ts: input.threadTs ?? nextTs(),
      },
      event_ts: nextTs(),
    });

  const channelMessage = (input: ChannelMessageInput): EventCallbackBody => {
    const extra: Record<string, unknown> = {};
    if (input.threadTs !== undefined && input.parentUserId !== undefined) {
      extra.parent_user_id = input.parentUserId;
    }
    return callback(userMessage(input, input.channelType ?? "channel", extra));
  };

  return {
    callback,
    dm: (input) =>
      callback(userMessage({ ...input, channel: input.channel ?? `D${input.user.slice(1)}` }, "im")),
    channelMention: (input) => {
      const ts = input.ts ?? nextTs();
      const text = input.text ?? `<@${identity.botUserId}> hello`;
      const message = userMessage({ ...input, text, ts }, input.channelType ?? "channel");
      const { channel_type: _channelType, ...mention } = message;
      return {
        appMention: callback({ ...mention, type: "app_mention" }),
        message: callback(message),
      };
    },
    channelMessage,
    threadReply: (input) =>
      channelMessage({ ...input, parentUserId: input.parentUserId ?? identity.botUserId }),
    botMessage: (input) => {
      const ts = input.ts ?? nextTs();
      const own = input.botId === undefined;
      const event: SlackEvent = {
        type: "message",
        subtype: "bot_message",
        text: input.text,
        ts,
        bot_id: input.botId ?? identity.botId,
        app_id: own ? identity.appId : "A0OTHERAPP",
        channel: input.channel,
        event_ts: ts,
        channel_type: input.channelType ?? "channel",
      };
      // Messages a bot posts with its bot token also carry the bot's user id.
      if (own) event.user = identity.botUserId;
      if (input.threadTs !== undefined) event.thread_ts = input.threadTs;
      return callback(event);
    },
    messageChanged: (input) => {
      const eventTs = nextTs();
      const editedTs = input.editedTs ?? eventTs;
      const base = { type: "message", user: input.user, ts: input.ts, team: identity.teamId };
      const thread = input.threadTs === undefined ? {} : { thread_ts: input.threadTs };
      return callback({
        type: "message",
        subtype: "message_changed",
        message: {
          ...base,
          ...thread,
          text: input.newText,
          edited: { user: input.user, ts: editedTs },
          client_msg_id: randomUUID(),
        },
        previous_message: { ...base, ...thread, text: input.previousText, client_msg_id: randomUUID() },
        channel: input.channel,
        hidden: true,
        ts: eventTs,
        event_ts: eventTs,
        channel_type: input.channelType,
      });
    },
    assistantThreadStarted: (input) => assistantThreadEvent("assistant_thread_started", input),
    assistantThreadContextChanged: (input) => assistantThreadEvent("assistant_thread_context_changed", input),
    messageDeleted: (input) => {
      const eventTs = nextTs();
      const thread = input.threadTs === undefined ? {} : { thread_ts: input.threadTs };
      return callback({
        type: "message",
        subtype: "message_deleted",
        hidden: true,
        deleted_ts: input.ts,
        channel: input.channel,
        previous_message: {
          type: "message",
          user: input.user,
          text: input.text,
          ts: input.ts,
          team: identity.teamId,
          ...thread,
        },
        ts: eventTs,
        event_ts: eventTs,
        channel_type: input.channelType,
      });
    },
  };
}
