/**
 * The one contract between switchboard's core and a chat platform. The core never names a
 * platform: conversation keys and reply targets are opaque strings that only the adapter that
 * made them encodes and decodes.
 */

import { z } from "zod";

/** Every channel switchboard speaks, in one list: schemas, config keys and stored rows derive from it. */
export const CHANNEL_NAMES = ["telegram", "discord", "slack", "whatsapp", "matrix", "web", "api"] as const;
export const channelNameSchema = z.enum(CHANNEL_NAMES);
export type ChannelName = z.infer<typeof channelNameSchema>;

/**
 * The markup an adapter's messages are written in; the outbox renders the model's Markdown into it
 * (outbox/format). `commonmark`: the client renders Markdown itself (the web chat).
 */
export const MARKUP_DIALECTS = [
  "telegram-html",
  "discord-markdown",
  "slack-mrkdwn",
  "whatsapp-markdown",
  "matrix-html",
  "commonmark",
] as const;
export type MarkupDialect = (typeof MARKUP_DIALECTS)[number];

/** Where on the platform the message was written; chooses the per-surface policy. */
export const SURFACE_KINDS = ["dm", "group", "thread"] as const;
export const surfaceKindSchema = z.enum(SURFACE_KINDS);
export type SurfaceKind = z.infer<typeof surfaceKindSchema>;

export const inboundAttachmentSchema = z.object({
  kind: z.enum(["photo", "file", "audio", "video", "voice", "sticker", "other"]),
  /** Platform file id or URL; never downloaded at ingress. */
  ref: z.string(),
  name: z.string().optional(),
  mediaType: z.string().optional(),
  sizeBytes: z.number().optional(),
  /** Playing time of a voice note, audio or video, as the platform states it. */
  durationSeconds: z.number().nonnegative().optional(),
});
export type InboundAttachment = z.infer<typeof inboundAttachmentSchema>;

/**
 * True when `text` shows nothing: only whitespace and invisible format characters (zero-width
 * spaces and joiners, word joiners, byte-order marks, soft hyphens). Such a message is empty.
 */
export function isBlank(text: string): boolean {
  return /^[\s\p{Cf}]*$/u.test(text);
}

/** Most attachments one inbound message may carry. */
export const MAX_INBOUND_ATTACHMENTS = 20;

/**
 * One platform update, normalised: produced by an adapter's parser, validated by ingress with
 * this schema before anything else looks at it (a message that fails it is ignored as malformed).
 */
export const inboundMessageSchema = z.object({
  channel: channelNameSchema,
  /** The bot account that received it (bot id, application id, team+app id). */
  account: z.string().min(1).max(200),
  /**
   * Unique per (channel, account) for this delivery's content: Telegram update_id (edits:
   * `edit:<chat>:<message>:<edit_date>`), Discord message id, Slack event_id (or channel+ts).
   */
  updateKey: z.string().min(1).max(300),
  /** The platform user who wrote it. */
  principal: z.object({
    id: z.string().min(1).max(200),
    name: z.string().max(500).optional(),
    isBot: z.boolean(),
  }),
  /** Opaque key naming the conversation: one DM, one group, one thread/topic. */
  conversationKey: z.string().min(1).max(500),
  /**
   * Opaque key naming the room that holds the conversation when it is finer than the room: a
   * Slack channel for one of its threads, a Telegram group for a topic or a per-user session.
   * Absent: the conversation is the whole room. A surface's `historyScope: "channel"` searches
   * every conversation of the room.
   */
  roomKey: z.string().min(1).max(500).optional(),
  /** Opaque key the adapter decodes to send the answer to the right chat/thread. */
  replyTarget: z.string().min(1).max(500),
  surface: surfaceKindSchema,
  /**
   * Where it was written, in the platform's own ids, for the config's `bindings` to match: the
   * chat (Telegram chat, Slack or Discord channel, Matrix room, WhatsApp chat; a thread's or
   * topic's is the chat that holds it), the Slack workspace (`team`), the Discord server (`guild`)
   * and the member's Discord role ids. Absent: only channel, account, user and surface match.
   */
  where: z
    .object({
      chat: z.string().min(1).max(200),
      team: z.string().min(1).max(200).optional(),
      guild: z.string().min(1).max(200).optional(),
      roles: z.array(z.string().min(1).max(200)).max(250).optional(),
    })
    .optional(),
  text: z.string(),
  /** Platform id of the message this one replies to, if any. */
  replyTo: z.string().max(200).optional(),
  /** Platform id of this message (to reply to it). */
  messageId: z.string().max(200).optional(),
  /** True when the bot was mentioned, replied to, or the thread is the bot's. */
  addressedToBot: z.boolean(),
  attachments: z.array(inboundAttachmentSchema).max(MAX_INBOUND_ATTACHMENTS),
  /** Milliseconds since epoch, from the platform when it says, else when received. */
  receivedAtMs: z.number(),
  /**
   * A button press instead of a written message: the pressed button's `data` (signed by whoever
   * made the button; ingress verifies it) and the platform's interaction id, which the adapter
   * answers. `text` is empty.
   */
  action: z
    .object({
      data: z.string().min(1).max(200),
      interactionId: z.string().min(1).max(300),
    })
    .optional(),
  /**
   * The person deleted (redacted) a message instead of writing one: `updateKey` is the deleted
   * message's own update key, as this adapter made it when the message arrived. The run answering
   * it is cancelled (queued) or stopped (running). `updateKey` above is the delete event's own key,
   * so a redelivered delete is a duplicate. `text` is empty.
   */
  withdrawn: z
    .union([
      z.object({ updateKey: z.string().min(1).max(300) }),
      /**
       * Where the delete names the message only by its platform id (Slack's message_deleted names a
       * ts; the message arrived under an event id): the run answering that message in this
       * conversation is found among its active runs.
       */
      z.object({ messageId: z.string().min(1).max(200) }),
    ])
    .optional(),
  /**
   * The person edited a message they sent before: `text` and `attachments` are its new content,
   * `messageId` the edited message's own platform id (the id its answer replies to), and
   * `updateKey` above the edit's own key, so a redelivered edit is a duplicate. Ingress makes it a
   * correction while the message's run has not finished, and applies the surface's `edits`
   * setting after.
   */
  edited: z
    .object({
      messageId: z.string().min(1).max(200),
    })
    .optional(),
  /**
   * The person reacted to a message instead of writing one: `emoji` (null: they removed their
   * reaction), the reacted-to message's platform id and, when the adapter still knows its text,
   * its start. Noted on the conversation for the agent's next turn; no run starts. `updateKey`
   * above is the reaction event's own key, so a redelivered reaction is a duplicate. `text` is empty.
   */
  reaction: z
    .object({
      emoji: z.string().min(1).max(64).nullable(),
      messageId: z.string().min(1).max(200),
      excerpt: z.string().max(500).optional(),
    })
    .optional(),
});
export type InboundMessage = z.infer<typeof inboundMessageSchema>;
/** Where a message was written, as bindings match it (see `InboundMessage.where`). */
export type InboundWhere = NonNullable<InboundMessage["where"]>;

/** What ingress made of an inbound message. The adapter acknowledges the platform after any of these. */
export type IngressOutcome =
  | {
      kind: "admitted";
      runId: string;
      conversationId: string;
      /** The message began its conversation (its first run): e.g. what names a Slack assistant thread. */
      startsConversation?: boolean;
    }
  | { kind: "duplicate"; runId: string | null; conversationId: string | null }
  | { kind: "ignored"; reason: string }
  | { kind: "command"; reply: string }
  /** A button press was handled (or refused): `notice` is the short text to show the presser. */
  | { kind: "action"; notice: string }
  /** A delete was applied to the run answering the deleted message (see `InboundMessage.withdrawn`). */
  | { kind: "withdrawn"; runId: string | null; effect: WithdrawEffect }
  /** A reaction was noted on the conversation (see `InboundMessage.reaction`); no run started. */
  | { kind: "noted"; conversationId: string };

/**
 * What a delete did: `cancelled` (its run was queued and ends without a model call), `stopped`
 * (its run was running and stops as /stop stops it), `finished` (the answer was already given),
 * `shared` (its run answers other messages too, so it goes on), `unknown` (no run answers it).
 */
export type WithdrawEffect = "cancelled" | "stopped" | "finished" | "shared" | "unknown";

/**
 * Called by an adapter for each update. Resolves only after the outcome is durable; when it
 * rejects, the adapter must NOT acknowledge the update (answer 5xx / do not advance the offset /
 * do not ack the envelope) so the platform delivers it again.
 */
export type Ingress = (message: InboundMessage, timing?: IngressTiming) => Promise<IngressOutcome>;

/** When the adapter got the update, for the reply's `receive` latency stage. */
export interface IngressTiming {
  /**
   * `performance.now()` (this process, sub-millisecond) when the platform's answer carrying the
   * update arrived: the long poll's response, the webhook request, the socket event.
   */
  arrivedAtMs: number;
}

/**
 * Where the answer to a person's message stands, shown as a reaction on that message
 * ({@link ChannelAdapter.react}): `seen` (admitted), `waiting` (a tool waits for approval), `done`
 * (the answer was delivered), `failed` (it failed, or its delivery is uncertain).
 */
export const REPLY_STATUSES = ["seen", "waiting", "done", "failed"] as const;
export type ReplyStatus = (typeof REPLY_STATUSES)[number];

/** Platform ids of what a send produced; stored as the outbox receipt. */
export interface SendReceipt {
  messageIds: string[];
}

export interface OutgoingMessage {
  /** Already rendered for this platform (see outbox/format) and within its length limit. */
  text: string;
  format: "rich" | "plain";
  /** Platform message id to reply to. */
  replyTo?: string;
  /** Stable per outbox record; used as Discord's nonce so a retried create is idempotent. */
  idempotencyKey: string;
  /**
   * Buttons under the message, by row (approval prompts). A press comes back as an inbound
   * message whose `action` is the button's `data`. On an edit, absent removes the buttons.
   */
  buttons?: Array<Array<{ label: string; data: string }>>;
}

/** Image types every platform shows inline as a photo; other images travel as documents. */
const PHOTO_TYPES = new Set(["image/jpeg", "image/png", "image/webp"]);

/** True when a file of this (sniffed) type is shown as a photo. */
export function isPhotoType(mimeType: string): boolean {
  return PHOTO_TYPES.has(mimeType);
}

/** A file to send, read from the blob store; its type was sniffed from the bytes. */
export interface OutgoingFile {
  bytes: Uint8Array;
  filename: string;
  mimeType: string;
  /** Already rendered and within `FileLimits.maxCaptionChars`; empty for no caption. */
  caption: string;
  format: "rich" | "plain";
  replyTo?: string;
  /** Stable per outbox record; Discord's nonce. */
  idempotencyKey: string;
}

/** How a platform takes files, by the kind it would show them as. */
export interface FileLimits {
  /** Largest file a bot may upload, in bytes. */
  maxFileBytes: number;
  /** Largest image shown as a photo, in bytes (bigger ones are refused); defaults to maxFileBytes. */
  maxPhotoBytes?: number;
  /** Longest caption that may go with a file, in characters as the platform counts them. */
  maxCaptionChars: number;
  /**
   * The chat downloads sent files from the gateway's blob store (the web chat), not from the
   * platform: a link works only while the gateway keeps the file. Absent: the platform keeps a copy.
   */
  servedByGateway?: boolean;
}

/** What the adapter can promise about a send. What it can do besides sending is its optional methods. */
export interface ChannelCapabilities {
  /** A send may be repeated after an uncertain outcome without a second visible message. */
  idempotentSend: boolean;
  /**
   * The platform reports each send's outcome afterwards (`ChannelEvents.deliveryStatus`): a send
   * whose outcome is unknown (an answer lost, a crash mid-send) waits this long, in milliseconds,
   * for that report before it becomes ambiguous. Absent: it is ambiguous at once.
   */
  statusWaitMs?: number;
}

/** Files a channel can send: uploads with a caption, within its limits. */
export interface ChannelFiles {
  readonly limits: FileLimits;
  /** Uploads a file with its caption (already within `limits`). */
  send(target: string, file: OutgoingFile): Promise<SendReceipt>;
}

/**
 * What a channel decides itself that ingress otherwise decides for it (the web chat, which
 * authenticates its sessions and picks its own message ids). Absent: ingress does all of it.
 */
export interface ChannelAdmission {
  /** Who may write is settled before ingress (a token, a session): no allow list applies. */
  readonly ownAccessControl: boolean;
  /** The channel limits its senders' rate itself: ingress's per-user flood limit does not apply. */
  readonly ownFloodLimit: boolean;
  /**
   * The client chooses update keys, so a key that comes back with other content is a client bug
   * to refuse, not a redelivery (platform ids always come back with the same content).
   */
  readonly clientChosenKeys: boolean;
}

export interface ChannelLimits {
  /** Longest text one message may carry, in characters as the platform counts them. */
  maxMessageChars: number;
  /** Minimum spacing of sends to one chat, in milliseconds. */
  perChatIntervalMs: number;
  /** Sustained sends per second for the whole account. */
  perAccountPerSecond: number;
  /** Minimum spacing of edits of one message, in milliseconds. */
  editIntervalMs: number;
}

export interface HttpRoute {
  method: "GET" | "POST";
  path: string;
  handle(request: Request, context?: HttpRouteContext): Promise<Response>;
  /**
   * Several accounts of the channel serve this method and path together (WhatsApp: one Meta app
   * posts every number's events to one callback URL). The gateway hands each of them a copy of
   * every request; each takes only what is its own and refuses a request that is not (401/403).
   * Without it, a second account on the route is refused at start.
   */
  shared?: boolean;
}

/** What the gateway's HTTP server knows of a request besides the request itself. */
export interface HttpRouteContext {
  /** The client as per-address limits key it: the socket's address (an IPv6 one by its /64), never a header's. */
  client: string;
}

/** Where catch-up resumes in one target: after the last message ingress recorded there. */
export interface CatchUpCursor {
  target: string;
  afterMessageId: string;
}

/** What one catch-up did; a failed target is logged by the adapter and skipped. */
export interface CatchUpReport {
  targets: number;
  fetched: number;
  delivered: number;
  failedTargets: number;
}

/**
 * A platform's native streamed message (Slack chat streaming in threads): one message that grows
 * by appends while the answer is written. After stop() it is an ordinary message: edit() and
 * delete() apply to it.
 */
export interface NativeStream {
  /** Starts the streamed message with `markdown`; its receipt names the message. */
  start(markdown: string): Promise<SendReceipt>;
  /** Appends `markdown` to what the message shows. */
  append(messageId: string, markdown: string): Promise<void>;
  /** Appends `markdown` (may be empty) and ends the stream. A stream already ended is not an error. */
  stop(messageId: string, markdown: string): Promise<void>;
  /** Longest text the message may reach while streaming. */
  readonly maxChars: number;
}

/** An attachment's bytes, streamed from the platform. */
export interface RemoteFile {
  body: AsyncIterable<Uint8Array>;
  /** The size the platform states before sending, when it does. */
  sizeBytes?: number;
}

/** What an adapter tells the gateway besides inbound messages. */
export interface ChannelEvents {
  /**
   * The platform connection came back as a new session that does not replay what was sent while
   * it was away (Discord: a fresh IDENTIFY after the session was invalidated). The gateway runs
   * `catchUp` again.
   */
  sessionRenewed?(): void;
  /**
   * The platform reported what became of a message the adapter sent (WhatsApp's status webhooks),
   * naming it by the `idempotencyKey` the send carried. Resolves once the report is recorded; when
   * it rejects, the adapter must not acknowledge the report, so the platform delivers it again.
   */
  deliveryStatus?(report: DeliveryStatusReport): Promise<void>;
  /**
   * The adapter refused something before ingress could see it (Matrix: a message in an encrypted
   * room): counted with ingress's ignored updates in /metrics under `reason`. The adapter logs it.
   */
  ignored?(reason: string): void;
}

/** What the platform says became of one sent message. */
export interface DeliveryStatusReport {
  /** The `idempotencyKey` of the send (`<outbox record key>#<chunk>`). */
  idempotencyKey: string;
  /** The platform's id of the message (the receipt). */
  messageId: string;
  /** `delivered`: the message reached the platform; `failed`: it never will. */
  outcome: "delivered" | "failed";
  /** For `failed`: the platform's code and title, for the operator. */
  reason?: string;
  /** The platform's word for it (`sent`, `delivered`, `read`, `failed`), for the record's history. */
  status: string;
}

export interface ChannelAdapter {
  readonly channel: ChannelName;
  /** The bot account id; known after start(). */
  readonly account: string;
  readonly capabilities: ChannelCapabilities;
  readonly limits: ChannelLimits;
  /** The markup `send` and `edit` take rich text in; the outbox renders the model's Markdown into it. */
  readonly markup: MarkupDialect;
  /** What the channel decides itself before ingress; absent for a chat platform's bot. */
  readonly admission?: ChannelAdmission;
  /** Connects and begins delivering updates to `ingress`. Resolves once connected. */
  start(ingress: Ingress, events?: ChannelEvents): Promise<void>;
  /** Stops receiving; in-flight ingress calls finish first. */
  stop(): Promise<void>;
  /** True while connected (readiness). */
  isConnected(): boolean;
  /** Routes this adapter serves on the gateway's HTTP server (webhooks). */
  routes?(): HttpRoute[];
  send(target: string, message: OutgoingMessage): Promise<SendReceipt>;
  /** File uploads; absent where the channel cannot show files. */
  readonly files?: ChannelFiles;
  /** Absent where messages cannot be edited: the outbox then sends instead of editing. */
  edit?(target: string, messageId: string, message: OutgoingMessage): Promise<void>;
  /** Absent where the bot cannot delete its messages: chunks of a shortened answer then stay. */
  delete?(target: string, messageId: string): Promise<void>;
  /**
   * Shows `status` as the bot's reaction on the person's message `messageId` in `target`, in place
   * of `previous` (the statuses it may show now, never `status`; empty: none; after a restart, all
   * the others, so one it may not show is taken away without error). Each adapter picks the emoji
   * its platform allows. Best effort: the caller drops any failure, so an implementation must not
   * wait out a rate limit (a 429 rejects at once). Absent where bots cannot react.
   */
  react?(
    target: string,
    messageId: string,
    status: ReplyStatus,
    previous: readonly ReplyStatus[],
  ): Promise<void>;
  /** Shows "typing…" for a few seconds; absent where the platform has no indicator for bots. */
  typing?(target: string): Promise<void>;
  /**
   * Native streaming preview where the platform has it (Telegram drafts in private chats): shows
   * `text` as an ephemeral, animated draft `draftId` to the target. Not a message: the final answer
   * is still delivered through the outbox. Present only when the target supports it.
   */
  draftFor?(target: string): ((draftId: number, text: string) => Promise<void>) | null;
  /**
   * Native streamed messages where the platform has them (Slack, in threads), for a reply to
   * `recipient` (the platform user the answer is for) in `target`; null where the target cannot
   * stream. The streamed message is the answer's message, delivered and recorded by the outbox.
   */
  nativeStreamFor?(target: string, recipient: string): NativeStream | null;
  /**
   * For platforms that never redeliver what was missed while down: fetches, per target, the
   * messages after `afterMessageId` (bounded by the adapter) and hands them to ingress in order.
   */
  catchUp?(cursors: CatchUpCursor[]): Promise<CatchUpReport>;
  /**
   * Opens an attachment by the `ref` its InboundAttachment carried, for streaming (after
   * admission, never while acknowledging). Throws a SwitchboardError: `retryable` for an outage,
   * not for a refusal (gone, too big for the platform's download API, no access).
   */
  openFile?(ref: string, signal: AbortSignal): Promise<RemoteFile>;
}
