import { z } from "zod";
import type { InboundAttachment, InboundMessage, InboundWhere, SurfaceKind } from "../types.ts";
import {
  channelConversationKey,
  dmConversationKey,
  dmThreadConversationKey,
  encodeReplyTarget,
  type ReplyTarget,
  threadConversationKey,
} from "./keys.ts";

/** Who the bot is and how to treat other bots; everything parse needs beyond the payload. */
export interface ParseContext {
  /** `<team_id>:<app_id or bot user id>`, as the adapter learned it from auth.test. */
  account: string;
  botUserId: string;
  botId: string | undefined;
  allowOtherBots: boolean;
  /** Used when the payload has no usable ts. */
  receivedAtMs: number;
}

export type SkipReason =
  | "not_event_callback"
  /** A block_actions payload without one usable button press. */
  | "malformed_action"
  | "malformed_event"
  | "unsupported_event"
  | "unsupported_subtype"
  | "own_message"
  | "other_bot"
  | "no_author"
  /** A channel message mentioning the bot; its `app_mention` twin is the one answered. */
  | "mention_answered_via_app_mention"
  /** message_changed with the same text, e.g. Slack adding a link unfurl. */
  | "edit_without_text_change";

export type ParseOutcome =
  | { kind: "message"; message: InboundMessage }
  | { kind: "skip"; reason: SkipReason };

/**
 * Slack ids and timestamps are short (`U061F7AUR`, `1700000100.000200`); the bound keeps a forged
 * body from producing keys ingress would refuse (update key ≤ 300 characters, user id ≤ 200).
 */
const slackId = z.string().min(1).max(64);
/** Display names pass through truncated rather than dropping the message. */
const displayName = z.string().transform((name) => name.slice(0, 256));

const fileSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  mimetype: z.string().optional(),
  size: z.number().optional(),
  url_private: z.string().optional(),
  /** Audio and video clips recorded in Slack state their length. */
  duration_ms: z.number().nonnegative().optional(),
});

const messageSchema = z.object({
  user: slackId.optional(),
  bot_id: slackId.optional(),
  text: z.string().default(""),
  ts: slackId,
  thread_ts: slackId.optional(),
  parent_user_id: slackId.optional(),
  files: z.array(fileSchema).max(20).optional(),
  user_profile: z
    .object({ display_name: displayName.optional(), real_name: displayName.optional() })
    .optional(),
  edited: z.object({ ts: slackId }).optional(),
});

const eventSchema = z.discriminatedUnion("type", [
  messageSchema.extend({ type: z.literal("app_mention"), channel: slackId }),
  z.object({
    type: z.literal("message"),
    subtype: z.string().optional(),
    channel: slackId,
    channel_type: z.string().optional(),
    ts: slackId,
  }),
]);

const callbackSchema = z.object({
  type: z.literal("event_callback"),
  event_id: slackId.optional(),
  /** The workspace the event happened in. */
  team_id: slackId.optional(),
  event: z.object({ type: z.string() }).loose(),
});

/** `message` subtypes that are a person (or bot) writing something new. */
const NEW_MESSAGE_SUBTYPES = new Set([undefined, "file_share", "thread_broadcast", "bot_message"]);

type SlackMessage = z.output<typeof messageSchema>;

/**
 * Turns one Events API `event_callback` body into an InboundMessage, or says why it is skipped.
 * Pure and SDK-free: the same function serves Socket Mode and HTTP.
 *
 * A channel message that mentions the bot arrives twice (`app_mention` and `message`, different
 * event ids); the `app_mention` is answered and the plain `message` skipped. Edits arrive only as
 * `message_changed`, so a mention added by an edit is read from that.
 */
export function parseSlackEvent(body: unknown, context: ParseContext): ParseOutcome {
  const callback = callbackSchema.safeParse(body);
  if (!callback.success) {
    const type = typeof body === "object" && body !== null && "type" in body ? body.type : undefined;
    return skip(type === "event_callback" ? "malformed_event" : "not_event_callback");
  }
  const envelope = eventSchema.safeParse(callback.data.event);
  if (!envelope.success) {
    const type = callback.data.event.type;
    return skip(type === "message" || type === "app_mention" ? "malformed_event" : "unsupported_event");
  }
  const event = envelope.data;
  const eventId = callback.data.event_id;
  const team = callback.data.team_id;

  if (event.type === "app_mention") {
    return toInbound(
      event,
      { channel: event.channel, channelType: undefined, eventId, team, mention: true },
      context,
    );
  }
  const raw = callback.data.event;
  if (event.subtype === "message_changed")
    return parseEdit(
      raw,
      { channel: event.channel, channelType: event.channel_type, eventId, team },
      context,
    );
  if (event.subtype === "message_deleted")
    return parseDelete(
      raw,
      { channel: event.channel, channelType: event.channel_type, eventId, team },
      context,
    );
  if (!NEW_MESSAGE_SUBTYPES.has(event.subtype)) return skip("unsupported_subtype");

  const message = messageSchema.safeParse(raw);
  if (!message.success) return skip("malformed_event");
  const isDm = channelKind(event.channel, event.channel_type) === "dm";
  if (!isDm && mentionsBot(message.data.text, context.botUserId))
    return skip("mention_answered_via_app_mention");
  return toInbound(
    message.data,
    { channel: event.channel, channelType: event.channel_type, eventId, team, mention: false },
    context,
  );
}

function parseEdit(
  raw: Record<string, unknown>,
  at: Pick<Placement, "channel" | "channelType" | "eventId" | "team">,
  context: ParseContext,
): ParseOutcome {
  const { channel, channelType } = at;
  const edited = messageSchema.safeParse(raw.message);
  if (!edited.success) return skip("malformed_event");
  const previous = messageSchema.safeParse(raw.previous_message);
  if (previous.success && previous.data.text === edited.data.text) return skip("edit_without_text_change");
  const eventTs = slackId.safeParse(raw.event_ts);
  const editTs = edited.data.edited?.ts ?? (eventTs.success ? eventTs.data : edited.data.ts);
  const outcome = toInbound(
    edited.data,
    {
      ...at,
      mention: channelKind(channel, channelType) !== "dm" && mentionsBot(edited.data.text, context.botUserId),
      fallbackKeySuffix: `:edit:${editTs}`,
      atTs: editTs,
    },
    context,
  );
  if (outcome.kind === "message") outcome.message.edited = { messageId: edited.data.ts };
  return outcome;
}

/**
 * A person deleted a message (`message_deleted`, which names it by ts): a withdrawal of that
 * message, in the conversation the message was in, read from `previous_message` (without it the
 * conversation is unknown, and the delete is skipped).
 */
function parseDelete(
  raw: Record<string, unknown>,
  at: Pick<Placement, "channel" | "channelType" | "eventId" | "team">,
  context: ParseContext,
): ParseOutcome {
  const deleted = messageSchema.safeParse(raw.previous_message);
  if (!deleted.success) return skip("malformed_event");
  const eventTs = slackId.safeParse(raw.event_ts);
  const outcome = toInbound(
    deleted.data,
    {
      ...at,
      mention:
        channelKind(at.channel, at.channelType) !== "dm" && mentionsBot(deleted.data.text, context.botUserId),
      fallbackKeySuffix: ":delete",
      ...(eventTs.success ? { atTs: eventTs.data } : {}),
    },
    context,
  );
  if (outcome.kind !== "message") return outcome;
  return {
    kind: "message",
    message: {
      ...outcome.message,
      text: "",
      attachments: [],
      withdrawn: { messageId: deleted.data.ts },
    },
  };
}

interface Placement {
  channel: string;
  channelType: string | undefined;
  eventId: string | undefined;
  /** The workspace's team id, when the envelope names it. */
  team?: string | undefined;
  /** The bot is mentioned (app_mention, or an edit whose text mentions it). */
  mention: boolean;
  /** Appended to the `<channel>:<ts>` fallback update key, to tell an edit from the original. */
  fallbackKeySuffix?: string;
  /** ts to date the message by, when not the message's own (edits). */
  atTs?: string;
}

/** Where bindings see the message: its channel, and its workspace (the envelope's, else the bot's own). */
function whereOf(channel: string, team: string | undefined, context: ParseContext): InboundWhere {
  return { chat: channel, team: team ?? context.account.split(":")[0]! };
}

/** A thread's room is its channel; a DM and a channel's top level are their own room. */
function roomOf(account: string, channel: string, surface: SurfaceKind): { roomKey?: string } {
  return surface === "thread" ? { roomKey: channelConversationKey(account, channel) } : {};
}

function toInbound(message: SlackMessage, placement: Placement, context: ParseContext): ParseOutcome {
  const { channel } = placement;
  const author = classifyAuthor(message, context);
  if (author.kind === "skip") return skip(author.reason);

  const surface = channelKind(channel, placement.channelType);
  const inThread = message.thread_ts !== undefined && message.thread_ts !== message.ts;
  let conversationKey: string;
  let target: ReplyTarget;
  let surfaceKind: SurfaceKind;
  if (surface === "dm") {
    // The DM's top level is one conversation per person; each thread in it (an assistant
    // thread, or a reply thread) is its own, answered in that thread.
    conversationKey =
      inThread && message.thread_ts !== undefined
        ? dmThreadConversationKey(context.account, author.id, message.thread_ts)
        : dmConversationKey(context.account, author.id);
    target = inThread ? { channel, threadTs: message.thread_ts } : { channel };
    surfaceKind = "dm";
  } else if (inThread) {
    conversationKey = threadConversationKey(context.account, channel, message.thread_ts ?? message.ts);
    target = { channel, threadTs: message.thread_ts };
    surfaceKind = "thread";
  } else if (placement.mention) {
    // A top-level mention is answered in a thread on it, and that thread is the conversation:
    // follow-ups written in the thread then share the key.
    conversationKey = threadConversationKey(context.account, channel, message.ts);
    target = { channel, threadTs: message.ts };
    surfaceKind = "thread";
  } else {
    conversationKey = channelConversationKey(context.account, channel);
    target = { channel };
    surfaceKind = "group";
  }

  const inbound: InboundMessage = {
    channel: "slack",
    account: context.account,
    updateKey: placement.eventId ?? `${channel}:${message.ts}${placement.fallbackKeySuffix ?? ""}`,
    principal:
      author.name === undefined
        ? { id: author.id, isBot: author.isBot }
        : { id: author.id, name: author.name, isBot: author.isBot },
    conversationKey,
    ...roomOf(context.account, channel, surfaceKind),
    replyTarget: encodeReplyTarget(target),
    surface: surfaceKind,
    where: whereOf(channel, placement.team, context),
    text: stripLeadingMention(message.text, context.botUserId),
    messageId: message.ts,
    addressedToBot: surface === "dm" || placement.mention || message.parent_user_id === context.botUserId,
    attachments: (message.files ?? []).map(toAttachment),
    receivedAtMs: tsToMs(placement.atTs ?? message.ts) ?? context.receivedAtMs,
  };
  if (inThread && message.thread_ts !== undefined) inbound.replyTo = message.thread_ts;
  return { kind: "message", message: inbound };
}

type Author =
  | { kind: "person"; id: string; name: string | undefined; isBot: boolean }
  | { kind: "skip"; reason: "own_message" | "other_bot" | "no_author" };

function classifyAuthor(message: SlackMessage, context: ParseContext): Author {
  const isOwn =
    message.user === context.botUserId || (message.bot_id !== undefined && message.bot_id === context.botId);
  if (isOwn) return { kind: "skip", reason: "own_message" };
  const name = message.user_profile?.display_name || message.user_profile?.real_name || undefined;
  if (message.bot_id !== undefined) {
    if (!context.allowOtherBots) return { kind: "skip", reason: "other_bot" };
    return { kind: "person", id: message.user ?? message.bot_id, name, isBot: true };
  }
  if (message.user === undefined) return { kind: "skip", reason: "no_author" };
  return { kind: "person", id: message.user, name, isBot: false };
}

function channelKind(channel: string, channelType: string | undefined): "dm" | "channel" {
  if (channelType !== undefined) return channelType === "im" ? "dm" : "channel";
  return channel.startsWith("D") ? "dm" : "channel";
}

function mentionsBot(text: string, botUserId: string): boolean {
  return text.includes(`<@${botUserId}>`) || text.includes(`<@${botUserId}|`);
}

/** "<@UBOT> what's up" → "what's up"; mentions elsewhere in the text are left alone. */
function stripLeadingMention(text: string, botUserId: string): string {
  const pattern = new RegExp(`^\\s*<@${botUserId}(?:\\|[^>]*)?>[\\s,:]*`);
  return text.replace(pattern, "");
}

function tsToMs(ts: string): number | undefined {
  const seconds = Number(ts);
  return Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : undefined;
}

function toAttachment(file: z.output<typeof fileSchema>): InboundAttachment {
  const mediaType = file.mimetype;
  const kind: InboundAttachment["kind"] = mediaType?.startsWith("image/")
    ? "photo"
    : mediaType?.startsWith("audio/")
      ? "audio"
      : mediaType?.startsWith("video/")
        ? "video"
        : "file";
  const attachment: InboundAttachment = { kind, ref: file.url_private ?? file.id };
  if (file.name !== undefined) attachment.name = file.name;
  if (mediaType !== undefined) attachment.mediaType = mediaType;
  if (file.size !== undefined) attachment.sizeBytes = file.size;
  if (file.duration_ms !== undefined) attachment.durationSeconds = file.duration_ms / 1000;
  return attachment;
}

function skip(reason: SkipReason): ParseOutcome {
  return { kind: "skip", reason };
}

const blockActionsSchema = z.object({
  type: z.literal("block_actions"),
  user: z.object({ id: slackId, username: displayName.optional(), name: displayName.optional() }),
  team: z.object({ id: slackId }).nullish(),
  container: z.object({
    message_ts: slackId,
    channel_id: slackId,
    thread_ts: slackId.optional(),
  }),
  channel: z.object({ id: slackId }).optional(),
  actions: z
    .array(z.object({ type: z.string(), value: z.string().optional(), action_ts: slackId }).loose())
    .min(1),
});

/** True for an interactivity payload with button presses. */
export function isBlockActions(body: unknown): boolean {
  return typeof body === "object" && body !== null && (body as { type?: unknown }).type === "block_actions";
}

/**
 * A Block Kit button press: an inbound message with `action` (the button's value) and no text, in
 * the conversation of the message the button is under. Slack never redelivers an interactivity
 * payload; the update key (user and action_ts) still dedupes a press that reaches ingress twice.
 */
export function parseSlackAction(body: unknown, context: ParseContext): ParseOutcome {
  const parsed = blockActionsSchema.safeParse(body);
  if (!parsed.success) return skip("malformed_action");
  const { user, container, actions } = parsed.data;
  const action = actions[0]!;
  if (action.type !== "button" || !action.value) return skip("malformed_action");
  if (user.id === context.botUserId) return skip("own_message");
  const channel = container.channel_id;
  const threadTs = container.thread_ts;
  let conversationKey: string;
  let target: ReplyTarget;
  let surface: SurfaceKind;
  if (channelKind(channel, undefined) === "dm") {
    conversationKey =
      threadTs === undefined
        ? dmConversationKey(context.account, user.id)
        : dmThreadConversationKey(context.account, user.id, threadTs);
    target = threadTs === undefined ? { channel } : { channel, threadTs };
    surface = "dm";
  } else if (threadTs !== undefined) {
    conversationKey = threadConversationKey(context.account, channel, threadTs);
    target = { channel, threadTs };
    surface = "thread";
  } else {
    conversationKey = channelConversationKey(context.account, channel);
    target = { channel };
    surface = "group";
  }
  const name = user.name || user.username || undefined;
  return {
    kind: "message",
    message: {
      channel: "slack",
      account: context.account,
      updateKey: `action:${user.id}:${action.action_ts}`,
      principal: name === undefined ? { id: user.id, isBot: false } : { id: user.id, name, isBot: false },
      conversationKey,
      ...roomOf(context.account, channel, surface),
      replyTarget: encodeReplyTarget(target),
      surface,
      where: whereOf(channel, parsed.data.team?.id, context),
      text: "",
      messageId: container.message_ts,
      addressedToBot: true,
      attachments: [],
      receivedAtMs: tsToMs(action.action_ts) ?? context.receivedAtMs,
      action: { data: action.value.slice(0, 200), interactionId: `${user.id}:${action.action_ts}` },
    },
  };
}
