/**
 * The outbox's changes, each written once for both engines (see steps.ts): a generator yields the
 * steps it needs ({@link OutboxSteps}) and decides between them; SQLite runs it synchronously
 * inside a write transaction, PostgreSQL awaits each step. {@link EngineOutboxRepository} is the base both
 * repositories extend; the terminal commit runs {@link commitAnswer} inside its own transaction.
 */
import type { ChannelName, SendReceipt } from "../../channels/types.ts";
import { decidePlatformStatus } from "../../outbox/platform-status.ts";
import {
  type OutboxActor,
  type OutboxCounts,
  type OutboxHistoryEntry,
  type OutboxInsert,
  type OutboxListFilter,
  type OutboxRecord,
  type OutboxRepository,
  type OutboxState,
  type OutboxStreamRecord,
  type PlatformStatusReport,
  type PlatformStatusResult,
  type RecoverySummary,
  type RenderedText,
  type StreamStart,
  targetKey,
} from "../../outbox/types.ts";
import { SwitchboardError } from "../errors.ts";
import { newId } from "../util/ids.ts";
import {
  type AnswerDelivery,
  type AnswerDeliveryResult,
  actorEntry,
  answerInsert,
  answerMarkdown,
  appendedReceiptJson,
  assertInsertable,
  awaitingStatusError,
  checkOperatorAction,
  emptyRecoverySummary,
  enqueuedHistoryJson,
  HOLD_FOREVER_MS,
  history,
  isFinal,
  isFinalInsert,
  mediaJson,
  type OperatorTarget,
  type OutboxRow,
  presentationJson,
  promptInserts,
  recoveryOf,
  STATUS_WAIT_ENDED,
  streamKey,
  toOutboxRecord,
} from "./outbox-records.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/** The chat a record belongs to: its ordinals count, and its records are sent in turn, per target. */
export type OutboxTarget = { channel: string; account: string; target: string };

/** The columns a change may set besides `state`, `updated_at_ms` and `history`. */
export type OutboxColumns = Partial<
  Record<
    "attempts" | "next_attempt_at_ms" | "rendered" | "format" | "chunks_delivered" | "receipt" | "last_error",
    string | number | null
  >
>;

/** Conditions a change holds under besides its record's state; each engine writes them as its SQL. */
export interface ChangeGuard {
  kind?: "message" | "stream";
  chunksDelivered?: number;
  /** A stream only when it is final and its text is this one (a message always). */
  streamShows?: string;
  /**
   * A claim of a record read before the change (PostgreSQL): its attempts are still `attempts`,
   * it is due at `nowMs` and final, and nothing else holds its target, so a record another process
   * read before it moved on is not sent out of turn. SQLite, the database's one writer, checks
   * only the state.
   */
  claim?: { attempts: number; nowMs: number };
}

/** A new record as stored, but for its ordinal and times (the engine's to fill in). */
export interface NewRecord {
  id: string;
  key: string;
  runId: string;
  conversationId: string;
  channel: string;
  account: string;
  target: string;
  replyTo: string | null;
  kind: OutboxInsert["kind"];
  markdown: string;
  final: boolean;
  /** JSON */
  history: string;
  /** JSON or null */
  presentation: string | null;
  /** JSON or null */
  media: string | null;
}

/** One record's compare-and-set change. */
export interface RecordChange {
  id: string;
  /** The change applies only while the record is in one of these. */
  from: readonly OutboxState[];
  /** Its new state; absent, it keeps its state. */
  to?: OutboxState;
  set?: OutboxColumns;
  where?: ChangeGuard;
  /** Appended to its history, in this order (none: the history is left as it is). */
  entries: readonly OutboxHistoryEntry[];
  nowMs: number;
}

/** The outbox's reads and writes, each inside the running transaction (or, see `apply`, alone). */
export interface OutboxSteps {
  /** The record with this id or key; null when there is none. */
  row(idOrKey: string): OutboxRow | null;
  /** The same, locked until the transaction ends (PostgreSQL; SQLite's one writer only reads it). */
  lockRow(idOrKey: string): OutboxRow | null;
  /**
   * Serialises, per target and across processes, the writes that must see the target's records
   * settled (PostgreSQL's advisory locks; nothing on SQLite, whose transactions already take turns).
   */
  lockTargets(targets: readonly OutboxTarget[]): void;
  /** Inserts `record` as the next ordinal of its target, unless a record has its key; true when inserted. */
  insertRecord(record: NewRecord, nowMs: number): boolean;
  /** Sets the final text of the stream record `key` unless it is final already; true when it did. */
  finalizeStream(key: string, markdown: string, entry: OutboxHistoryEntry, nowMs: number): boolean;
  hasStream(key: string): boolean;
  /** Applies `change`; true when the record was as it expects. */
  change(change: RecordChange): boolean;
  /** Applies `change`; the row as it now is, or null when the record was not as it expects. */
  changed(change: RecordChange): OutboxRow | null;
  /** The records being sent, in ordinal order (then insertion order). */
  sendingRows(): OutboxRow[];
  /** The ids of the messages whose wait for the platform's report is over at `nowMs`, in ordinal order. */
  statusWaitsOver(nowMs: number): string[];
  /**
   * Whether the run has ended. PostgreSQL locks its row for share first, so an ending without its
   * owner in progress is waited for, and one that starts later waits for this transaction.
   */
  runEnded(runId: string): boolean;
  /** Whether the run has a record that is not a file (files a tool sent are not its answer). */
  runAnswered(runId: string): boolean;
  /** Whether another record holds the row's target at `nowMs`, so the row may not be sent yet. */
  targetHeld(row: OutboxRow, nowMs: number): boolean;

  // ---- reads (see OutboxRepository) ----
  /** Up to `limit` deliverable heads of the targets of `channels` due at `nowMs`, earliest due first. */
  heads(channels: readonly ChannelName[], nowMs: number, limit: number): OutboxRow[];
  /** When the earliest head of `channels` falls due, or an ambiguous record's hold ends, after `nowMs`. */
  wakeAt(channels: readonly ChannelName[], nowMs: number): number | null;
  list(filter: OutboxListFilter): OutboxRow[];
  counts(conversationId: string): OutboxCounts;
}

/** An outbox change's procedure, as an engine runs it. */
export type OutboxWrite<R> = Generator<StepCall<OutboxSteps>, R, unknown>;

const step = stepsOf<OutboxSteps>();
type A<K extends keyof OutboxSteps> = Answer<OutboxSteps, K>;

/**
 * Inserts outbox records, each the next ordinal of its target (under the targets' locks); a key
 * that already exists is skipped, so a replayed commit enqueues nothing twice. Answers the ids of
 * the records inserted.
 */
export function* insertRecords(inserts: readonly OutboxInsert[], nowMs: number): OutboxWrite<string[]> {
  for (const insert of inserts) assertInsertable(insert);
  if (inserts.length > 0) yield step("lockTargets", inserts);
  const inserted: string[] = [];
  for (const insert of inserts) {
    const record = newRecord(insert, nowMs);
    if ((yield step("insertRecord", record, nowMs)) as A<"insertRecord">) inserted.push(record.id);
  }
  return inserted;
}

function newRecord(insert: OutboxInsert, nowMs: number): NewRecord {
  return {
    id: insert.id ?? newId("obx", nowMs),
    key: insert.key,
    runId: insert.runId,
    conversationId: insert.conversationId,
    channel: insert.channel,
    account: insert.account,
    target: insert.target,
    replyTo: insert.replyTo ?? null,
    kind: insert.kind,
    markdown: insert.markdown,
    final: isFinalInsert(insert),
    history: enqueuedHistoryJson(nowMs),
    presentation: presentationJson(insert),
    media: mediaJson(insert),
  };
}

/**
 * Sets a stream record's final text. Its state is untouched: a live stream still owns it, or the
 * worker will deliver it. False when there is no stream record with `key` (the run never
 * streamed: insert a message).
 */
export function* finalizeStream(key: string, markdown: string, nowMs: number): OutboxWrite<boolean> {
  if ((yield step("finalizeStream", key, markdown, history.finalized(nowMs), nowMs)) as A<"finalizeStream">) {
    return true;
  }
  return (yield step("hasStream", key)) as A<"hasStream">;
}

/**
 * The terminal commit's one call, inside its transaction: finalises the run's stream record when
 * it streamed, else enqueues the answer as `<runId>:0`. The target's lock comes first, so a stream
 * starting at the same time either is finalised here or finds this answer and stays off: exactly
 * one of the two ever exists.
 */
export function* commitAnswer(answer: AnswerDelivery, nowMs: number): OutboxWrite<AnswerDeliveryResult> {
  yield step("lockTargets", [answer]);
  const markdown = answerMarkdown(answer);
  const outcome: AnswerDeliveryResult = (yield* finalizeStream(streamKey(answer.runId), markdown, nowMs))
    ? "stream-finalized"
    : markdown.trim() === ""
      ? "nothing-to-send"
      : "enqueued";
  if (outcome === "enqueued") yield* insertRecords([answerInsert(answer, markdown)], nowMs);
  yield* insertRecords(promptInserts(answer), nowMs);
  return outcome;
}

/** Claims a pending record for a send (see {@link ChangeGuard.claim}). */
export function* markSending(
  id: string,
  nowMs: number,
  rendered?: RenderedText,
): OutboxWrite<OutboxRecord | null> {
  const row = (yield step("row", id)) as A<"row">;
  if (row?.state !== "pending") return null;
  yield step("lockTargets", [row]);
  const set: OutboxColumns = { attempts: row.attempts + 1 };
  if (rendered && row.kind === "message" && row.rendered === null) set.rendered = JSON.stringify(rendered);
  const moved = (yield step("changed", {
    id: row.id,
    from: ["pending"],
    to: "sending",
    set,
    where: { claim: { attempts: row.attempts, nowMs } },
    entries: [history.sending(nowMs, row.attempts + 1)],
    nowMs,
  })) as A<"changed">;
  return moved ? toOutboxRecord(moved) : null;
}

/** A chunk delivered; with `last`, the message is delivered in the same write. */
export function* recordChunkDelivered(
  id: string,
  chunkIndex: number,
  messageIds: string[],
  nowMs: number,
  last: boolean,
): OutboxWrite<boolean> {
  const row = (yield step("row", id)) as A<"row">;
  if (row?.state !== "sending" || row.chunks_delivered !== chunkIndex) return false;
  const receipt = appendedReceiptJson(row.receipt, messageIds);
  const chunk = history.chunkDelivered(nowMs, chunkIndex, row.rendered);
  const change: RecordChange = last
    ? {
        id,
        from: ["sending"],
        to: "delivered",
        set: { chunks_delivered: chunkIndex + 1, receipt, last_error: null },
        where: { chunksDelivered: chunkIndex, kind: "message" },
        entries: [chunk, history.delivered(nowMs, JSON.parse(receipt) as SendReceipt)],
        nowMs,
      }
    : {
        id,
        from: ["sending"],
        set: { chunks_delivered: chunkIndex + 1, receipt },
        where: { chunksDelivered: chunkIndex },
        entries: [chunk],
        nowMs,
      };
  return (yield step("change", change)) as A<"change">;
}

/** Keeps a sending message waiting for the platform's report until `untilMs`; false if it moved on. */
export function* awaitStatus(
  id: string,
  reason: string,
  nowMs: number,
  untilMs: number,
): OutboxWrite<boolean> {
  return (yield step("change", {
    id,
    from: ["sending"],
    set: { next_attempt_at_ms: untilMs, last_error: awaitingStatusError(reason) },
    where: { kind: "message" },
    entries: [history.awaitingStatus(nowMs, untilMs, reason)],
    nowMs,
  })) as A<"change">;
}

/** One compare-and-set change (the writes that need no read first). */
export function* change(request: RecordChange): OutboxWrite<boolean> {
  return (yield step("change", request)) as A<"change">;
}

/** What startup makes of the records found `sending` (see recoveryOf). */
export function* recoverInterrupted(
  idempotentChannels: ReadonlySet<ChannelName>,
  nowMs: number,
  holdUntilMs: number,
  statusWaits: ReadonlyMap<ChannelName, number>,
): OutboxWrite<RecoverySummary> {
  const summary = emptyRecoverySummary();
  for (const row of (yield step("sendingRows")) as A<"sendingRows">) {
    const recovery = recoveryOf(row, idempotentChannels, statusWaits);
    const moved =
      recovery.outcome === "awaitingStatus"
        ? yield* awaitStatus(row.id, recovery.reason, nowMs, nowMs + recovery.waitMs)
        : ((yield step(
            "change",
            recovery.outcome === "ambiguous"
              ? {
                  id: row.id,
                  from: ["sending"],
                  to: "ambiguous",
                  set: { last_error: recovery.reason, next_attempt_at_ms: holdUntilMs },
                  entries: [history.ambiguous(nowMs, recovery.reason)],
                  nowMs,
                }
              : {
                  id: row.id,
                  from: ["sending"],
                  to: "pending",
                  set: { next_attempt_at_ms: nowMs },
                  entries: [history.recovered(nowMs, recovery.note)],
                  nowMs,
                },
          )) as A<"change">);
    if (moved) summary[recovery.outcome].push(row.id);
  }
  return summary;
}

/** The platform's own report on a chunk of a record (see outbox/platform-status.ts). */
export function* applyPlatformStatus(
  recordKey: string,
  chunk: number,
  report: PlatformStatusReport,
  nowMs: number,
): OutboxWrite<PlatformStatusResult> {
  const row = (yield step("lockRow", recordKey)) as A<"lockRow">;
  const record = row ? toOutboxRecord(row) : null;
  const decision = decidePlatformStatus(record, chunk, report);
  if (!decision.apply) return { applied: false, why: decision.why, record };
  const moved = (yield step("changed", {
    id: row!.id,
    from: [decision.from],
    to: decision.to,
    set:
      decision.to === "delivered"
        ? { receipt: JSON.stringify(decision.receipt), last_error: null, chunks_delivered: chunk + 1 }
        : { last_error: decision.reason },
    entries: [history.resolvedByStatus(nowMs, decision.note)],
    nowMs,
  })) as A<"changed">;
  return moved
    ? { applied: true, record: toOutboxRecord(moved) }
    : { applied: false, why: "the record changed meanwhile", record };
}

/** Messages whose wait for the platform's report is over become ambiguous; answers their ids. */
export function* expireStatusWaits(nowMs: number, holdUntilMs: number): OutboxWrite<string[]> {
  const expired: string[] = [];
  for (const id of (yield step("statusWaitsOver", nowMs)) as A<"statusWaitsOver">) {
    const moved = (yield step("change", {
      id,
      from: ["sending"],
      to: "ambiguous",
      set: { last_error: STATUS_WAIT_ENDED, next_attempt_at_ms: holdUntilMs },
      entries: [history.statusWaitEnded(nowMs, STATUS_WAIT_ENDED)],
      nowMs,
    })) as A<"change">;
    if (moved) expired.push(id);
  }
  return expired;
}

/**
 * Creates (or resumes) the run's stream record, live only when it may preview now. The run's
 * ending is read (and, on PostgreSQL, locked) before the target's lock, in the terminal commit's
 * order (run, then target); the target's lock comes before anything of the outbox is read.
 */
export function* beginStream(
  insert: Omit<OutboxInsert, "kind" | "key">,
  nowMs: number,
): OutboxWrite<StreamStart> {
  const ended = (yield step("runEnded", insert.runId)) as A<"runEnded">;
  yield step("lockTargets", [insert]);
  const key = streamKey(insert.runId);
  let row = (yield step("row", key)) as A<"row">;
  if (row === null) {
    // Nor may a run that ended before its stream opened (superseded, with nothing to send) leave an
    // open stream at the head of its chat.
    if (((yield step("runAnswered", insert.runId)) as A<"runAnswered">) || ended) {
      return { live: false, reason: "answered" };
    }
    yield* insertRecords([{ ...insert, key, kind: "stream", final: false }], nowMs);
    row = (yield step("row", key)) as NonNullable<A<"row">>;
  }
  if (row.kind !== "stream" || row.state !== "pending" || isFinal(row)) {
    return { live: false, reason: "unavailable" };
  }
  if ((yield step("targetHeld", row, nowMs)) as A<"targetHeld">) return { live: false, reason: "queued" };
  const moved = (yield step("changed", {
    id: row.id,
    from: ["pending"],
    to: "sending",
    set: { attempts: row.attempts + 1 },
    entries: [history.livePreview(nowMs)],
    nowMs,
  })) as A<"changed">;
  // Only an operator's cancel, committed since the read, can have moved it.
  if (!moved) return { live: false, reason: "unavailable" };
  return { live: true, record: toOutboxRecord(moved) as OutboxStreamRecord };
}

/** An operator's action on a record (the row lock keeps it still between the checks and the change). */
export function* operate(
  id: string,
  to: OperatorTarget,
  entry: OutboxHistoryEntry,
  set: OutboxColumns,
): OutboxWrite<OutboxRecord> {
  const row = (yield step("lockRow", id)) as A<"lockRow">;
  const from = checkOperatorAction(id, row, to);
  const moved = (yield step("changed", {
    id: row!.id,
    from: [from],
    to,
    set,
    entries: [entry],
    nowMs: entry.atMs,
  })) as A<"changed">;
  if (!moved) {
    throw new SwitchboardError(
      "version_conflict",
      `Outbox record ${row!.id} changed while it was being updated; show it again, then retry.`,
    );
  }
  return toOutboxRecord(moved);
}

type DeliverableQuery = Parameters<OutboxRepository["nextDeliverable"]>[1];

/** The deliverable heads (see OutboxRepository.nextDeliverable). */
export function* nextDeliverable(nowMs: number, options: DeliverableQuery): OutboxWrite<OutboxRecord[]> {
  if (options.channels.length === 0 || options.limit <= 0) return [];
  const excluded = options.excludeTargets ?? new Set<string>();
  const rows = (yield step("heads", options.channels, nowMs, options.limit + excluded.size)) as A<"heads">;
  return rows
    .map(toOutboxRecord)
    .filter((record) => !excluded.has(targetKey(record)))
    .slice(0, options.limit);
}

function* records(filter: OutboxListFilter): OutboxWrite<OutboxRecord[]> {
  return ((yield step("list", filter)) as A<"list">).map(toOutboxRecord);
}

function* record(idOrKey: string): OutboxWrite<OutboxRecord | null> {
  const row = (yield step("row", idOrKey)) as A<"row">;
  return row ? toOutboxRecord(row) : null;
}

function* wakeAt(channels: readonly ChannelName[], nowMs: number): OutboxWrite<number | null> {
  if (channels.length === 0) return null;
  return (yield step("wakeAt", channels, nowMs)) as A<"wakeAt">;
}

function* counts(conversationId: string): OutboxWrite<OutboxCounts> {
  return (yield step("counts", conversationId)) as A<"counts">;
}

/**
 * The outbox repository, each method one procedure above; an engine supplies its steps and how
 * it runs them. `transact` runs a procedure in one write transaction; `apply` one whose only write
 * is a compare-and-set that holds by its own conditions (PostgreSQL runs it without a
 * transaction); `read` one that only reads.
 */
export abstract class EngineOutboxRepository implements OutboxRepository {
  protected abstract transact<R>(procedure: OutboxWrite<R>): Promise<R>;
  protected abstract apply<R>(procedure: OutboxWrite<R>): Promise<R>;
  protected abstract read<R>(procedure: OutboxWrite<R>): Promise<R>;

  nextDeliverable(nowMs: number, options: DeliverableQuery): Promise<OutboxRecord[]> {
    return this.read(nextDeliverable(nowMs, options));
  }

  nextWakeAtMs(channels: readonly ChannelName[], nowMs: number): Promise<number | null> {
    return this.read(wakeAt(channels, nowMs));
  }

  list(filter: OutboxListFilter): Promise<OutboxRecord[]> {
    return this.read(records(filter));
  }

  show(idOrKey: string): Promise<OutboxRecord | null> {
    return this.read(record(idOrKey));
  }

  counts(conversationId: string): Promise<OutboxCounts> {
    return this.read(counts(conversationId));
  }

  insert(inserts: OutboxInsert[], nowMs: number): Promise<string[]> {
    return this.transact(insertRecords(inserts, nowMs));
  }

  markSending(id: string, nowMs: number, rendered?: RenderedText): Promise<OutboxRecord | null> {
    return this.transact(markSending(id, nowMs, rendered));
  }

  recordChunkDelivered(
    id: string,
    chunkIndex: number,
    messageIds: string[],
    nowMs: number,
    last = false,
  ): Promise<boolean> {
    return this.apply(recordChunkDelivered(id, chunkIndex, messageIds, nowMs, last));
  }

  replaceRendered(id: string, rendered: RenderedText, nowMs: number): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        set: { rendered: JSON.stringify(rendered) },
        where: { kind: "message", chunksDelivered: 0 },
        entries: [history.fallback(nowMs, rendered)],
        nowMs,
      }),
    );
  }

  recordStreamProgress(
    id: string,
    messageIds: string[],
    format: "rich" | "plain",
    nowMs: number,
  ): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        set: { receipt: JSON.stringify({ messageIds }), format },
        where: { kind: "stream" },
        entries: [],
        nowMs,
      }),
    );
  }

  markDelivered(id: string, receipt: SendReceipt, nowMs: number, shownMarkdown?: string): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        to: "delivered",
        set: { receipt: JSON.stringify(receipt), last_error: null },
        // A stream is delivered only when the chat shows its canonical final text.
        where: { streamShows: shownMarkdown ?? "" },
        entries: [history.delivered(nowMs, receipt)],
        nowMs,
      }),
    );
  }

  scheduleRetry(id: string, nextAttemptAtMs: number, error: string, nowMs: number): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        to: "pending",
        set: { next_attempt_at_ms: nextAttemptAtMs, last_error: error },
        entries: [history.retryScheduled(nowMs, nextAttemptAtMs, error)],
        nowMs,
      }),
    );
  }

  markFailed(id: string, reason: string, nowMs: number): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        to: "failed",
        set: { last_error: reason },
        entries: [history.failed(nowMs, reason)],
        nowMs,
      }),
    );
  }

  markAmbiguous(id: string, reason: string, nowMs: number, holdUntilMs = HOLD_FOREVER_MS): Promise<boolean> {
    return this.apply(
      change({
        id,
        from: ["sending"],
        to: "ambiguous",
        set: { last_error: reason, next_attempt_at_ms: holdUntilMs },
        entries: [history.ambiguous(nowMs, reason)],
        nowMs,
      }),
    );
  }

  /** Single-process start-up only: several processes would need owner-scoped recovery (future work). */
  recoverInterrupted(
    idempotentChannels: ReadonlySet<ChannelName>,
    nowMs: number,
    holdUntilMs = HOLD_FOREVER_MS,
    statusWaits: ReadonlyMap<ChannelName, number> = new Map(),
  ): Promise<RecoverySummary> {
    return this.transact(recoverInterrupted(idempotentChannels, nowMs, holdUntilMs, statusWaits));
  }

  applyPlatformStatus(
    recordKey: string,
    chunk: number,
    report: PlatformStatusReport,
    nowMs: number,
  ): Promise<PlatformStatusResult> {
    return this.transact(applyPlatformStatus(recordKey, chunk, report, nowMs));
  }

  awaitPlatformStatus(id: string, reason: string, nowMs: number, untilMs: number): Promise<boolean> {
    return this.apply(awaitStatus(id, reason, nowMs, untilMs));
  }

  expireStatusWaits(nowMs: number, holdUntilMs = HOLD_FOREVER_MS): Promise<string[]> {
    return this.transact(expireStatusWaits(nowMs, holdUntilMs));
  }

  beginStream(insert: Omit<OutboxInsert, "kind" | "key">, nowMs: number): Promise<StreamStart> {
    return this.transact(beginStream(insert, nowMs));
  }

  retry(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.transact(
      operate(id, "pending", actorEntry(nowMs, actor, "retry", note), {
        attempts: 0,
        next_attempt_at_ms: nowMs,
      }),
    );
  }

  resolve(
    id: string,
    outcome: "delivered" | "failed",
    actor: OutboxActor,
    note: string,
    nowMs: number,
  ): Promise<OutboxRecord> {
    return this.transact(operate(id, outcome, actorEntry(nowMs, actor, `resolve ${outcome}`, note), {}));
  }

  cancel(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.transact(operate(id, "cancelled", actorEntry(nowMs, actor, "cancel", note), {}));
  }
}
