/**
 * The durable outbox: every answer the runtime commits becomes one record here, and the delivery
 * worker turns records into platform calls. A record's state is written before each platform call
 * and after it, so a crash leaves it either retryable with certainty or visibly `ambiguous`.
 *
 * Persisted meaning is versioned by OUTBOX_SCHEMA_VERSION (src/store/sqlite/outbox.ts).
 */
import type { ChannelName, SendReceipt } from "../channels/types.ts";

export type OutboxState = "pending" | "sending" | "delivered" | "failed" | "ambiguous" | "cancelled";

/** `message`: sent as one or more chunks. `stream`: previewed live by editing, finalised by the run's terminal commit. */
export type OutboxKind = "message" | "stream";

/** Who changed a record: the gateway itself, or a named operator (`operator:alice`). */
export type OutboxActor = "system" | `operator:${string}`;

export interface OutboxHistoryEntry {
  atMs: number;
  actor: OutboxActor;
  action: string;
  note?: string;
}

/** The platform-ready text of a record, fixed once rendered so a resumed delivery sends the same chunks. */
export interface RenderedText {
  format: "rich" | "plain";
  chunks: string[];
}

/** Buttons under a message, by row; a press comes back to ingress with the button's `data`. */
export type OutboxButtons = Array<Array<{ label: string; data: string }>>;

/**
 * How a record is shown beyond its text: `buttons` under its last message; or `editOf`, the key
 * of an earlier record whose (last) message this one edits in place, removing its buttons.
 */
export interface OutboxPresentation {
  buttons?: OutboxButtons;
  editOf?: string;
  /**
   * With `editOf`: sent as a new (plain text) message instead when the edited record's message is
   * unknown, because an operator resolved it `--delivered` (which records no platform message id).
   * `approvalId` is the approval whose prompt it was, for the log line that says so.
   */
  orSend?: { markdown: string; approvalId: string };
}

/**
 * The file a media record delivers. Its caption is the record's `markdown` (may be empty). The
 * bytes live in the blob store; the type was sniffed from them when they were stored.
 */
export interface OutboxMedia {
  /** Blob store id (hex sha256) of the bytes. */
  blobId: string;
  /** The name the file is shown with. */
  filename: string;
  /** Sniffed from the bytes, never taken from where the file came from. */
  mimeType: string;
  sizeBytes: number;
  /**
   * Kept in the blob store until this instant (ms since the epoch), whatever happens to the
   * conversation (/new, a rotated key): an /export's stated lifetime where the gateway serves the
   * link. A purge (/forget) clears the record's media, and with it this promise. Absent: the
   * file is kept as the conversation's other files are.
   */
  keepUntilMs?: number;
}

interface OutboxRecordBase {
  id: string;
  /** Unique and stable: `<runId>:<segment>` (`run_x:0`, `run_x:stream`). A second insert with it is ignored. */
  key: string;
  runId: string;
  conversationId: string;
  channel: ChannelName;
  account: string;
  /** Opaque reply target; only the channel's adapter decodes it. */
  target: string;
  replyTo: string | null;
  /** Causal order within (channel, account, target); assigned at insert, strictly increasing. */
  ordinal: number;
  /** The canonical answer text, before any platform rendering. */
  markdown: string;
  state: OutboxState;
  /** Platform delivery attempts started (incremented each time the record enters `sending`). */
  attempts: number;
  /** A `pending` record is not attempted before this time (milliseconds since epoch). */
  nextAttemptAtMs: number;
  /** Message ids on the platform so far; grows chunk by chunk, null until the first succeeds. */
  receipt: SendReceipt | null;
  lastError: string | null;
  /** Append-only. */
  history: OutboxHistoryEntry[];
  presentation: OutboxPresentation | null;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface OutboxMessageRecord extends OutboxRecordBase {
  kind: "message";
  /** Null until the first delivery attempt renders it. */
  rendered: RenderedText | null;
  /** How many of `rendered.chunks` are confirmed delivered; a resumed delivery starts there. */
  chunksDelivered: number;
  /**
   * A file to deliver: chunk 0 goes with it as its caption (possibly empty), further chunks follow
   * as text messages. Null for a text message.
   */
  media: OutboxMedia | null;
}

export interface OutboxStreamRecord extends OutboxRecordBase {
  kind: "stream";
  /** True once the run's terminal commit set `markdown` to the final text; only then may the worker deliver it. */
  final: boolean;
  /** Format the live preview last used; the final delivery starts from it. Null before any preview. */
  format: "rich" | "plain" | null;
}

export type OutboxRecord = OutboxMessageRecord | OutboxStreamRecord;

/** What the terminal commit (or a stream's start) asks the outbox to deliver. */
export interface OutboxInsert {
  /** Defaults to a fresh `obx_…` id. */
  id?: string;
  key: string;
  runId: string;
  conversationId: string;
  channel: ChannelName;
  account: string;
  target: string;
  replyTo?: string;
  kind: OutboxKind;
  markdown: string;
  /** Stream records only: false while the run is still producing text. Ignored for messages (always final). */
  final?: boolean;
  /** Messages only: buttons, or the record it edits. */
  presentation?: OutboxPresentation;
  /** Messages only: a file to deliver, with `markdown` as its caption (may then be empty). */
  media?: OutboxMedia;
}

export interface OutboxListFilter {
  state?: OutboxState;
  conversationId?: string;
  /** Records for one reply target of one channel (both are needed: targets are per channel). */
  destination?: { channel: ChannelName; target: string };
  /** Newest first; defaults to 100. */
  limit?: number;
}

export interface OutboxCounts {
  /** Records not yet delivered and not stuck: `pending` or `sending`. */
  waiting: number;
  /** Records an operator must look at. */
  ambiguous: number;
}

export interface RecoverySummary {
  /** Interrupted sends of idempotent channels, put back to `pending` to be repeated with the same key. */
  requeued: string[];
  /** Stream records with messages on the platform, put back to `pending` to be finished by editing. */
  resumedStreams: string[];
  /** Interrupted sends whose outcome is unknown; left for an operator. */
  ambiguous: string[];
  /**
   * Interrupted sends on channels whose platform reports each send's outcome (status webhooks):
   * still `sending`, waiting for that report until the channel's wait ends, then ambiguous.
   */
  awaitingStatus: string[];
}

/** What the platform reported about one chunk of a record (see outbox/platform-status.ts). */
export interface PlatformStatusReport {
  messageId: string;
  outcome: "delivered" | "failed";
  /** For `failed`: the platform's code and title. */
  reason?: string;
  /** The platform's word (`sent`, `delivered`, `read`, `failed`). */
  status: string;
}

/** What applying a platform's report did. */
export interface PlatformStatusResult {
  /** True when the report settled the record (delivered or failed) in this write. */
  applied: boolean;
  /** Why nothing changed, when `applied` is false. */
  why?: string;
  /** The record as it is now; null when no record has the key. */
  record: OutboxRecord | null;
}

export type StreamStart =
  | { live: true; record: OutboxStreamRecord }
  /**
   * `queued`: an earlier answer to the same target is undelivered, so previewing now would break
   * the order; the final text is delivered by the worker. `answered`: the run already has outbox
   * records (its terminal commit won the race). `unavailable`: the stream record exists but is
   * not resumable (ambiguous, failed, delivered, cancelled).
   */
  | { live: false; reason: "queued" | "answered" | "unavailable" };

/**
 * Durable store of outbox records. Every mutation is one `BEGIN IMMEDIATE` transaction; times are
 * milliseconds since epoch passed in by the caller. Worker-side mutations are compare-and-set on
 * the state they expect and return false (or null) when the record moved on (an operator cancelled
 * it, say): the caller must then stop working on it.
 */
export interface OutboxRepository {
  /** Inserts records in one transaction; a key that already exists is skipped. Returns the ids of new records. */
  insert(inserts: OutboxInsert[], nowMs: number): Promise<string[]>;

  /**
   * The deliverable head of each target: the lowest-ordinal record that holds its chat (pending,
   * sending, or ambiguous within its hold), when it is `pending`, due at `nowMs` and (for streams)
   * final. A target whose head is sending, ambiguous or waiting for a retry yields nothing.
   * Empty: nothing to do now.
   */
  nextDeliverable(
    nowMs: number,
    options: { limit: number; channels: readonly ChannelName[]; excludeTargets?: ReadonlySet<string> },
  ): Promise<OutboxRecord[]>;

  /**
   * When the worker should look again: the earliest `nextAttemptAtMs` among pending final heads of
   * `channels`, or the end of an ambiguous record's hold after `nowMs`; null when nothing waits.
   */
  nextWakeAtMs(channels: readonly ChannelName[], nowMs: number): Promise<number | null>;

  /**
   * pending → sending, counting an attempt, persisted before the platform call. For a message whose
   * text is not rendered yet, stores `rendered`. Null when the record is no longer pending.
   */
  markSending(id: string, nowMs: number, rendered?: RenderedText): Promise<OutboxRecord | null>;

  /**
   * Records that chunk `chunkIndex` of a sending message was delivered as `messageIds`. With
   * `last`, the message is also delivered (receipt: every chunk's ids) in the same write. False if
   * the record moved on.
   */
  recordChunkDelivered(
    id: string,
    chunkIndex: number,
    messageIds: string[],
    nowMs: number,
    last?: boolean,
  ): Promise<boolean>;

  /** Replaces a sending message's rendering with the plain-text fallback; only before any chunk was delivered. */
  replaceRendered(id: string, rendered: RenderedText, nowMs: number): Promise<boolean>;

  /** Persists the message ids a sending stream currently shows (and the format they use). */
  recordStreamProgress(
    id: string,
    messageIds: string[],
    format: "rich" | "plain",
    nowMs: number,
  ): Promise<boolean>;

  /**
   * sending → delivered. For a stream record, only when it is final and `shownMarkdown` equals its
   * final markdown (what the chat shows is the canonical answer); otherwise false.
   */
  markDelivered(id: string, receipt: SendReceipt, nowMs: number, shownMarkdown?: string): Promise<boolean>;

  /** sending → pending, not attempted again before `nextAttemptAtMs`. */
  scheduleRetry(id: string, nextAttemptAtMs: number, error: string, nowMs: number): Promise<boolean>;

  /** sending → failed, with the reason an operator will read. */
  markFailed(id: string, reason: string, nowMs: number): Promise<boolean>;

  /**
   * sending → ambiguous: the platform may or may not have shown it; never resent without an
   * operator. It holds back its chat's later records until `holdUntilMs` (default: until an
   * operator decides), so they do not overtake it while someone may still retry it.
   */
  markAmbiguous(id: string, reason: string, nowMs: number, holdUntilMs?: number): Promise<boolean>;

  /**
   * Startup: every `sending` record was interrupted by a crash. Idempotent channels and streams
   * with a receipt go back to `pending`; messages of a channel in `statusWaits` (channel → wait in
   * ms) wait that long for the platform's report (`awaitPlatformStatus`); the rest become
   * `ambiguous`, holding their chats until `holdUntilMs` as in `markAmbiguous`. Run before the
   * worker starts.
   */
  recoverInterrupted(
    idempotentChannels: ReadonlySet<ChannelName>,
    nowMs: number,
    holdUntilMs?: number,
    statusWaits?: ReadonlyMap<ChannelName, number>,
  ): Promise<RecoverySummary>;

  /**
   * Applies the platform's report about chunk `chunk` of the record keyed `recordKey`, as
   * `decidePlatformStatus` says, in one compare-and-set write: a `sending` or `ambiguous` record
   * becomes delivered (the report's message id in its receipt) or failed (its reason), with a
   * "resolved by platform status" history entry. A report that settles nothing changes nothing.
   */
  applyPlatformStatus(
    recordKey: string,
    chunk: number,
    report: PlatformStatusReport,
    nowMs: number,
  ): Promise<PlatformStatusResult>;

  /**
   * A sending record whose send's outcome is unknown stays `sending` (holding its chat) and waits
   * for the platform's report until `untilMs`, `reason` in its last error. False if it moved on.
   */
  awaitPlatformStatus(id: string, reason: string, nowMs: number, untilMs: number): Promise<boolean>;

  /**
   * Records whose wait for the platform's report ended at or before `nowMs` become `ambiguous`,
   * holding their chats until `holdUntilMs` as in `markAmbiguous`. Their ids; empty: none.
   */
  expireStatusWaits(nowMs: number, holdUntilMs?: number): Promise<string[]>;

  /** Creates (or resumes) the stream record `<runId>:stream`; live only when it may preview now. */
  beginStream(insert: Omit<OutboxInsert, "kind" | "key">, nowMs: number): Promise<StreamStart>;

  /** Records of one state/conversation, newest first. Empty: none match. */
  list(filter: OutboxListFilter): Promise<OutboxRecord[]>;

  /** One record by id (or by key); null when there is none. */
  show(idOrKey: string): Promise<OutboxRecord | null>;

  /** Operator: ambiguous|failed → pending now, attempts reset. Throws `not_found` / `input_invalid`. */
  retry(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord>;

  /** Operator: ambiguous|failed → delivered|failed as checked on the platform. Nothing more is sent. */
  resolve(
    id: string,
    outcome: "delivered" | "failed",
    actor: OutboxActor,
    note: string,
    nowMs: number,
  ): Promise<OutboxRecord>;

  /** Operator: pending|ambiguous|failed → cancelled; unblocks the target. */
  cancel(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord>;

  /** `/status` counts for one conversation. Zero counts when it has no records. */
  counts(conversationId: string): Promise<OutboxCounts>;
}

/** What delivery reports for metrics; called synchronously, so keep it cheap. */
export interface DeliveryObserver {
  /** The platform answered 429 to a call on `channel`; the whole account waits its `retryAfterMs`. */
  rateLimited?(channel: ChannelName, account: string): void;
  /** A platform call of a message record's first chunk starts now (the rate limiter let it go); again on a retry. */
  firstSendStarted?(record: OutboxMessageRecord): void;
  /** The platform accepted that first chunk now. */
  firstSendAnswered?(record: OutboxMessageRecord): void;
}

/** Key of one rate-limited, ordered delivery lane. */
export function targetKey(record: Pick<OutboxRecord, "channel" | "account" | "target">): string {
  return `${record.channel}\u0000${record.account}\u0000${record.target}`;
}
