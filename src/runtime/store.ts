import { isSwitchboardError, SwitchboardError } from "../errors.ts";
import type { DurableEvent } from "./events.ts";
import type {
  InputPart,
  InputPolicy,
  Message,
  MessagePart,
  RunState,
  StepRecord,
  StopReason,
  TerminalRunState,
  Usage,
} from "./types.ts";

/**
 * The runtime's persistence boundary. Every method is one atomic transaction unless its doc says
 * otherwise; reads see one committed snapshot. Times are milliseconds since the epoch and come
 * from the caller (stores never read the clock). A second backend implements this interface and
 * must pass test/store/conformance.ts. What only operators ask of the store beyond this is
 * src/operator/runtime-store.ts.
 */
export interface RuntimeStore {
  /**
   * Durable, idempotent admission: inserts the input message, assigns it a run (new, or the
   * pending successor when coalescing) and applies the input policy to the conversation's earlier
   * runs — all in one transaction. With `ingress`, the (source, key) pair is recorded in the same
   * transaction; a repeat returns `duplicate` with the original run, whatever conversation the key
   * maps to now. Same idempotency key with a different fingerprint throws `idempotency_conflict`.
   * A purged conversation throws `conversation_purged`; so does a repeat of an ingress identity
   * whose conversation was purged since (its receipt says `purged`), whatever conversation the key
   * maps to now, writing nothing. A repeat of an ingress identity refused before (its receipt says
   * `refused:…`) throws `update_refused`, also writing nothing ({@link isSettledUpdate}).
   */
  admit(request: AdmitRequest): Promise<AdmitResult>;

  /** One run and, once it is terminal, its answer. Never reads history. Null when unknown. */
  loadRun(runId: string): Promise<RunView | null>;

  /** The conversation's queued and running runs in durable order. Never reads history. */
  listActiveRuns(conversationId: string): Promise<RunRecord[]>;

  /**
   * Takes the run this conversation should execute next, in one transaction: a running run whose
   * owner's lease expired (resumed), then urgent queued runs FIFO, then ordinary queued runs FIFO.
   * When none is runnable, says until when another owner's live lease holds the conversation
   * (`heldUntilMs`, null when nothing is queued or held).
   */
  acquireNext(request: AcquireNextRequest): Promise<NextAcquisition>;

  /** Extends the lease. False when the fence no longer holds: stop working on the run. */
  renewLease(fence: Fence, nowMs: number, leaseMs: number): Promise<boolean>;

  /** Throws `fence_lost` unless the run is still owned under this fencing token. */
  assertFence(fence: Fence): Promise<void>;

  /**
   * The bounded material for the next model call of a run: recent whole turns before it (at most
   * `maxTurns`, oldest first, superseded and absorbed turns excluded), its own inputs, its
   * assistant message so far, and queued `inject` inputs that may join it now. Cost does not grow
   * with conversation length.
   */
  loadPromptContext(runId: string, options: { maxTurns: number }): Promise<PromptContext>;

  /**
   * Persists one completed step: the assistant message so far, the step record and the inputs that
   * joined the run. Throws `fence_lost` for a stale owner.
   */
  checkpoint(request: CheckpointRequest): Promise<{ seq: number }>;

  /**
   * Saves the assistant message so far between steps, without a step record or an event: a tool
   * call marked started before it runs, then its result. Throws `fence_lost` for a stale owner.
   */
  saveToolProgress(
    fence: Fence,
    assistantParts: MessagePart[],
    nowMs: number,
    /** A result too large for the prompt, kept in full in the same transaction (read_output pages it). */
    spilled?: SpilledOutput,
  ): Promise<void>;

  /**
   * A slice (in characters) of an output kept by `saveToolProgress`, found only within its own
   * conversation: another conversation's reference reads as null, like an unknown one.
   */
  readToolOutput(
    conversationId: string,
    ref: string,
    slice: { offset: number; length: number },
  ): Promise<ToolOutputSlice | null>;

  /**
   * Replaces the parts of one of the run's own input messages with their prepared form (a fetched
   * file's blob id, a transcript), without an event. Throws `fence_lost` for a stale owner and
   * `not_found` when `messageId` is not an input of the run.
   */
  saveInputParts(fence: Fence, messageId: string, parts: InputPart[]): Promise<void>;

  /**
   * Durably asks a running run to stop (commits `interrupt_requested`). Returns false when the run
   * is not active. A queued run is ended at once with the reason.
   */
  requestStop(runId: string, reason: StopReason, nowMs: number): Promise<StopRequestResult>;

  /**
   * Ends a run: its state, its final assistant message and its answer's `delivery` in one
   * transaction, fenced. When it completes, queued runs whose every input joined it end
   * `absorbed`. Throws `fence_lost` for a stale owner; a run already terminal also throws it.
   */
  commitTerminal(request: TerminalRequest): Promise<TerminalResult>;

  /**
   * Enqueues files the run sends (send_file, images a tool returned) for delivery, in one fenced
   * transaction, in order after what the target already has queued. Keys are stable per tool call,
   * so enqueuing again (a call run once more after a crash) adds nothing: the file is sent once.
   * Returns the ids of new records. Throws `fence_lost` for a stale owner.
   */
  enqueueFiles(fence: Fence, files: FileDelivery[], nowMs: number): Promise<string[]>;

  /** Gives a run back (graceful shutdown): running → queued with its progress kept. Fenced. */
  releaseRun(fence: Fence, nowMs: number): Promise<void>;

  /**
   * Ends every lease not held by `exceptOwner` now, so this worker may resume those runs. Only
   * for a single-process deployment, where any other owner is a process that died. Returns how
   * many runs it touched.
   */
  expireLeases(request: { exceptOwner: string; nowMs: number }): Promise<number>;

  /** One page of active runs across all conversations, in durable order after `afterQueueSeq`. */
  scanRecoverable(page: { afterQueueSeq: number; limit: number }): Promise<RunRecord[]>;

  /** Durable events after `afterSeq`, at most `limit`, oldest first. Empty when none. */
  readEvents(conversationId: string, afterSeq: number, limit: number): Promise<DurableEvent[]>;

  /** Messages of a conversation in order, paged. Superseded/absorbed runs are marked. */
  listMessages(conversationId: string, page: { afterOrder: number; limit: number }): Promise<MessagePage>;

  /**
   * Turns finished after the current summary beyond the newest `keepTurns` (oldest first, at most
   * `maxTurns`), the summary they would extend, and how many such turns there are in all. With
   * `minPending`, the turns are read only when more than that many are pending (a compaction that
   * is not due yet needs the count alone).
   */
  loadCompactionCandidates(conversationId: string, options: CompactionRead): Promise<CompactionCandidates>;

  /**
   * Replaces the conversation's summary, compare-and-set on its version: `conflict` when another
   * compaction saved first or `throughFinishSeq` does not advance. The turns stay in the store.
   */
  saveSummary(request: SummarySave): Promise<SummarySaveResult>;

  /** The conversation currently mapped to `key`, creating it when new. */
  resolveConversationKey(key: string, nowMs: number): Promise<string>;

  /** Maps `key` to a fresh conversation (the old one stays readable). Returns the new id. */
  rotateConversationKey(key: string, nowMs: number): Promise<string>;

  /**
   * Deletes a conversation's runs, messages, admissions, events, settings, summary and schedules
   * (with their occurrences), and drops the text of its outbox records (open ones are cancelled),
   * keeping a tombstone that records when and by whom (`actor`), so no later admission can
   * recreate it. One transaction. Refuses while runs are active.
   */
  purgeConversation(
    conversationId: string,
    options: { expectedVersion?: number; nowMs: number; actor?: string },
  ): Promise<PurgeResult>;

  /** The tombstone of a purged conversation (when, by whom); null when it was not purged. */
  loadPurge(conversationId: string): Promise<PurgeRecord | null>;

  /**
   * Per reply target of `source` (e.g. `discord:<account>`), the ingress key recorded last (by
   * recording time; ties by longer-then-greater key, which orders snowflakes), most recently
   * active target first, at most `limit` targets. Read-only; empty when nothing was recorded.
   */
  latestIngressPerTarget(
    source: string,
    limit: number,
  ): Promise<Array<{ replyTarget: string; updateKey: string }>>;

  /**
   * The inputs recorded under `source` whose key starts with `keyPrefix` (admitted or not: chat
   * commands too), newest first, at most `limit`, with the payload each was recorded with.
   * Read-only. The web chat rebuilds a session's transcript from them.
   */
  ingressByPrefix(
    source: string,
    keyPrefix: string,
    limit: number,
  ): Promise<Array<{ key: string; payload: unknown; atMs: number }>>;

  /**
   * What the ingress identity (source, key) was recorded as: its outcome and, when it was admitted,
   * its conversation, run and input message. Read-only; null when nothing was recorded under it.
   */
  loadIngressReceipt(source: string, key: string): Promise<IngressReceipt | null>;

  /**
   * Records an ingress identity for an input that is not admitted as a run (a chat command, an
   * ignored update) so a redelivery is recognised. `fresh` is false when the identity was already
   * recorded; then nothing is written.
   */
  claimIngress(request: IngressClaim): Promise<IngressClaimResult>;

  /** Per-conversation settings (e.g. the time zone set with /tz). Empty object when none. */
  loadConversationSettings(conversationId: string): Promise<ConversationSettings>;

  /** Merges `settings` into the conversation's settings. */
  saveConversationSettings(
    conversationId: string,
    settings: ConversationSettings,
    nowMs: number,
  ): Promise<void>;

  /** One approval request by id; null when unknown. */
  loadApproval(approvalId: string): Promise<ApprovalRecord | null>;

  /** Approval requests, newest first (at most `limit`, default 100). Empty when none match. */
  listApprovals(filter: ApprovalFilter): Promise<ApprovalRecord[]>;

  /**
   * The secret stored under `name`, storing `candidate` first when there is none (the first
   * caller wins; every later one reads the same value).
   */
  loadOrCreateSecret(name: string, candidate: string, nowMs: number): Promise<string>;

  /** A channel's durable state stored under `name` (Matrix's sync token, its login); null when none. */
  loadChannelState(name: string): Promise<string | null>;

  /** Stores `value` under `name`, replacing what was there (a channel's cursor advancing). */
  saveChannelState(name: string, value: string, nowMs: number): Promise<void>;

  /**
   * Registers a listener called after every committed mutation with the durable events it
   * appended, in commit order (never for a rolled-back one). Returns the unsubscribe function.
   */
  onCommitted(listener: (events: DurableEvent[]) => void): () => void;

  close(): Promise<void>;
}

export interface CompactionCandidates {
  summary: ConversationSummary | null;
  /** Oldest first, at most `maxTurns`. */
  turns: PromptTurn[];
  /** How many finished turns beyond the kept ones are not yet summarised. */
  pending: number;
}

/** What summarising compaction left in place of the turns up to `throughFinishSeq`. */
export interface ConversationSummary {
  text: string;
  throughFinishSeq: number;
  /** Incremented by every save; a save with a stale expected version is refused. */
  version: number;
}

/**
 * Where an input came from, recorded with its admission: a replay of (source, key) is the same
 * input. With `strict`, a replay whose input differs is an `idempotency_conflict` rather than a
 * duplicate: for sources whose keys the client picks (a browser's message id), not the platform.
 */
export interface IngressIdentity {
  source: string;
  key: string;
  payload: unknown;
  strict?: boolean;
}

export interface IngressClaimResult {
  fresh: boolean;
  previousOutcome: string | null;
  runId: string | null;
  /** The payload recorded by the first claim (null when fresh). */
  previousPayload: unknown;
}

/** What one ingress identity was recorded as ({@link RuntimeStore.loadIngressReceipt}). */
export interface IngressReceipt {
  /** `admitted`, `coalesced`, `command:<name>`, `refused:<why>`, `purged`, `withdrawn:<effect>`… */
  outcome: string;
  conversationId: string | null;
  /** The run the input was admitted to (a new one, or the pending run it joined); null when none. */
  runId: string | null;
  inputMessageId: string | null;
}

/** An ingress identity recorded without a run (a chat command, an ignored update). */
export interface IngressClaim {
  source: string;
  key: string;
  outcome: string;
  payload: unknown;
  conversationId?: string;
  nowMs: number;
}

export interface SummarySave {
  conversationId: string;
  text: string;
  throughFinishSeq: number;
  expectedVersion: number;
  nowMs: number;
}

export type SummarySaveResult =
  | { outcome: "saved"; version: number }
  | { outcome: "conflict"; actualVersion: number };

export interface ConversationSettings {
  /** IANA time zone for schedules and the agent's sense of time. */
  timezone?: string;
  /** The model picked with /model (a name from the config's `models`). */
  model?: string;
  /** Bytes of files downloaded for this conversation (SWITCHBOARD_MAX_CONVERSATION_MB). */
  mediaBytes?: number;
  /**
   * The conversation was left with /new: its messages stay readable, its files may be removed
   * (the prompt then names them "no longer stored").
   */
  mediaReleased?: boolean;
  /** The conversation was told how to set up voice transcription (it is told once). */
  transcriptionHinted?: boolean;
  /** Tools a person allowed for good in this conversation ("Always allow in this chat"). */
  alwaysAllow?: string[];
}

/** A tool result kept in full because it is too large for the prompt. */
export interface SpilledOutput {
  /** The opaque reference the model pages through with read_output. */
  ref: string;
  toolCallId: string;
  toolName: string;
  text: string;
}

export interface ToolOutputSlice {
  toolName: string;
  text: string;
  /** The whole output's length in characters (code points). */
  totalChars: number;
}

/**
 * What `admit` throws for a repeat of an ingress identity whose conversation was purged since: a
 * platform delivering an update of a forgotten conversation again, which must not be admitted
 * afresh. Ingress counts it as a duplicate.
 */
export function purgedUpdateError(ingress: { source: string; key: string }): SwitchboardError {
  return new SwitchboardError(
    "conversation_purged",
    `Update ${ingress.key} of ${ingress.source} belongs to a conversation purged since; it is not admitted again.`,
    { details: { ingressOutcome: "purged" } },
  );
}

/**
 * What `admit` throws for a repeat of an ingress identity refused before (no pairing grant yet,
 * too fast, over budget): the person was answered and told to send it again, so a redelivery stays
 * refused even when it would pass now. Ingress counts it as a duplicate.
 */
export function refusedUpdateError(
  ingress: { source: string; key: string },
  outcome: string,
): SwitchboardError {
  return new SwitchboardError(
    "update_refused",
    `Update ${ingress.key} of ${ingress.source} was refused before (${outcome}); it is not admitted now.`,
    { details: { ingressOutcome: outcome } },
  );
}

/**
 * True for the errors of an update whose receipt settles it as never admitted again
 * ({@link purgedUpdateError}, {@link refusedUpdateError}); not for other input to a purged conversation.
 */
export function isSettledUpdate(error: unknown): boolean {
  return (
    (isSwitchboardError(error, "conversation_purged") && error.details?.ingressOutcome === "purged") ||
    isSwitchboardError(error, "update_refused")
  );
}

export const APPROVAL_STATES = ["pending", "approved", "denied", "expired", "cancelled"] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

/** A tool call that waits (or waited) for a person's decision. */
export interface ApprovalRecord {
  id: string;
  conversationId: string;
  /** The run that asked; it ended `awaiting_approval`. */
  runId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** HMAC binding the id to the call (id, tool call id, tool name, input). */
  binding: string;
  state: ApprovalState;
  /** Who decided, as shown in the chat ("Alice", "operator:bob", "expired"). */
  decidedBy: string | null;
  /** The successor run the decision queued. */
  successorRunId: string | null;
  createdAtMs: number;
  expiresAtMs: number;
  decidedAtMs: number | null;
}

export interface ApprovalFilter {
  state?: ApprovalState;
  conversationId?: string;
  /** Only pending requests whose expiry is at or before this time. */
  expiredAtMs?: number;
  limit?: number;
}

/** An approval request written with the asking run's terminal commit. */
export interface ApprovalRequestInsert {
  id: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
  binding: string;
  expiresAtMs: number;
}

/** A decision admitted with its successor run (T1): pending → approved | denied | expired. */
export interface ApprovalDecision {
  approvalId: string;
  state: "approved" | "denied" | "expired";
  decidedBy: string;
  /** "Always allow in this chat": the tool joins the conversation's `alwaysAllow`. */
  alwaysAllowTool?: string;
}

export interface Fence {
  runId: string;
  fencingToken: number;
}

export interface ConversationHead {
  id: string;
  version: number;
  lastSeq: number;
  createdAtMs: number;
}

export interface AdmitRequest {
  /** The conversation by id, or by an opaque key resolved inside the admission transaction. */
  conversation: { id: string } | { key: string };
  idempotencyKey: string;
  /** Hash of the input; the same key with another fingerprint is a conflict. */
  fingerprint: string;
  parts: InputPart[];
  /** JSON context the run carries (reply target, channel, user); given to prompt, tools, delivery. */
  context: unknown;
  policy: InputPolicy;
  coalescePending: boolean;
  /** External dedupe identity (e.g. channel+account+update key) recorded with the admission. */
  ingress?: IngressIdentity;
  /**
   * The input is a decision on a pending approval: it is recorded (with the successor run) in
   * this transaction. Throws `state_conflict` when the approval is no longer pending.
   */
  approval?: ApprovalDecision;
  proposedIds: { runId: string; messageId: string };
  nowMs: number;
}

export type AdmitResult =
  | {
      outcome: "admitted" | "coalesced";
      conversationId: string;
      runId: string;
      inputMessageId: string;
      version: number;
      /** The admission event's seq in its conversation; 1: the input began the conversation. */
      seq: number;
      /** Running runs asked to stop by this input's policy. */
      stopRequested: Array<{ runId: string; reason: StopReason }>;
      /** Queued runs this input superseded (already terminal). */
      superseded: string[];
      /** Pending approvals this input cancelled (`supersede` and `interrupt` inputs). */
      cancelledApprovals: string[];
    }
  | {
      outcome: "duplicate";
      conversationId: string;
      runId: string;
      inputMessageId: string;
      version: number;
    };

export interface RunRecord {
  id: string;
  conversationId: string;
  state: RunState;
  priority: "urgent" | "normal";
  policy: InputPolicy;
  /** Global durable order of admission. */
  queueSeq: number;
  inputMessageIds: string[];
  assistantMessageId: string;
  owner: string | null;
  fencingToken: number;
  leaseExpiresAtMs: number | null;
  stopReason: StopReason | null;
  steps: number;
  usage: Usage;
  /** False when any step's cost was unavailable: the run's cost is then unavailable. */
  costComplete: boolean;
  absorbedInto: string | null;
  error: string | null;
  context: unknown;
  createdAtMs: number;
  startedAtMs: number | null;
  finishedAtMs: number | null;
}

export interface RunView {
  run: RunRecord;
  /** The assistant message; present once the run has any checkpoint or is terminal. */
  answer: Message | null;
}

export interface AcquireRequest {
  runId: string;
  owner: string;
  nowMs: number;
  leaseMs: number;
}

export interface AcquiredRun {
  run: RunRecord;
  fence: Fence;
  seq: number;
}

export interface CompactionRead {
  keepTurns: number;
  maxTurns: number;
  minPending?: number;
}

export interface AcquireNextRequest {
  conversationId: string;
  owner: string;
  nowMs: number;
  leaseMs: number;
}

export type NextAcquisition =
  | { acquired: AcquiredRun; heldUntilMs: null }
  | { acquired: null; heldUntilMs: number | null };

export interface PromptTurn {
  runId: string;
  state: RunState;
  /** Durable order in which turns finished. */
  finishSeq: number;
  /** Inputs and the assistant message in causal order. */
  messages: Message[];
}

export interface PromptContext {
  run: RunRecord;
  /** The summary of turns compacted away, if any; `history` starts after it. */
  summary: ConversationSummary | null;
  history: PromptTurn[];
  inputs: Message[];
  assistant: Message | null;
  /** The run's last saved step record (step `run.steps - 1`); null before its first step. */
  lastStep: StepRecord | null;
  /** Inputs of queued `inject` runs admitted after this run, in order, with their run ids. */
  joinable: Array<{ runId: string; message: Message }>;
}

export interface CheckpointRequest {
  fence: Fence;
  assistantParts: MessagePart[];
  step: StepRecord;
  /** Input message ids that joined the run in this step. */
  joinedInputIds: string[];
  nowMs: number;
}

export type StopRequestResult =
  | { outcome: "requested"; seq: number }
  | { outcome: "ended"; seq: number }
  | { outcome: "not_active" };

export interface TerminalRequest {
  fence: Fence;
  state: TerminalRunState;
  assistantParts: MessagePart[];
  error?: string;
  /**
   * What the run's chat must show of its answer; the store writes it as the run's outbox record
   * (or finalises the stream record the run already has) inside this terminal transaction, so the
   * answer and its delivery commit together. Absent: the run delivers nothing.
   */
  delivery?: AnswerDelivery;
  /** `awaiting_approval` only: the requests, stored in this transaction before any effect. */
  approvals?: ApprovalRequestInsert[];
  /**
   * The step that ended the run, saved as a checkpoint would save it (step row, usage, `checkpoint`
   * event) inside this transaction: a final step costs one commit, not two.
   */
  finalStep?: { step: StepRecord; parts: MessagePart[] };
  nowMs: number;
}

/** A finished run's answer as its chat must show it. The runtime knows channels only by name. */
export interface AnswerDelivery {
  runId: string;
  conversationId: string;
  /** The channel's name (`telegram`, `web`…), as the run's context carries it. */
  channel: string;
  account: string;
  target: string;
  replyTo?: string;
  state: TerminalRunState;
  /** The canonical answer (the terminal event's text). */
  text: string;
  /** Messages sent after the answer, each with buttons (approval prompts). */
  prompts?: DeliveryPrompt[];
}

/** A file a run sends to its conversation's reply target, with a caption (may be empty). */
export interface FileDelivery {
  /** Unique and stable: the outbox key (`<runId>:file:<toolCallId>[:<n>]`). */
  key: string;
  /** Where the run answers (its context's channel, account, target and the message it replies to). */
  channel: string;
  account: string;
  target: string;
  replyTo?: string;
  caption: string;
  /** The stored file: blob id, the name it is shown with, its sniffed type and size. */
  blobId: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
}

/** A message with buttons, delivered after a run's answer. */
export interface DeliveryPrompt {
  /** Unique and stable: the outbox key. */
  key: string;
  markdown: string;
  /** Rows of buttons; `data` comes back as the press's action. */
  buttons: Array<Array<{ label: string; data: string }>>;
}

export interface TerminalResult {
  seq: number;
  run: RunRecord;
  answer: Message;
  /** Runs that ended `absorbed` into this one. */
  absorbed: string[];
  /**
   * Conversations this commit admitted an input to besides its own (a child agent's result, for
   * its parent's conversation): the runtime wakes them.
   */
  resumed: string[];
  /** Runs of other conversations this commit asked to stop (a stopped parent's children). */
  stopped: Array<{ conversationId: string; runId: string }>;
}

export interface PurgeRecord {
  conversationId: string;
  purgedAtMs: number;
  /** Who asked (`user:<channel>:<id>`, `operator:<name>`); null for purges before it was recorded. */
  purgedBy: string | null;
}

export type PurgeResult =
  | { outcome: "purged" }
  | { outcome: "already_purged" }
  | { outcome: "active"; runIds: string[] }
  | { outcome: "conflict"; actualVersion: number };

export interface MessagePageItem {
  order: number;
  message: Message;
  runState: RunState;
}

export interface MessagePage {
  items: MessagePageItem[];
  nextAfterOrder: number | null;
}
