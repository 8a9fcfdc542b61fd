import type { Database } from "bun:sqlite";
import type { ChannelName, SendReceipt } from "../../../channels/types.ts";
import { AWAITING_STATUS_PREFIX, decidePlatformStatus } from "../../../outbox/platform-status.ts";
import { assertTransition } from "../../../outbox/transitions.ts";
import type {
  OutboxActor,
  OutboxCounts,
  OutboxHistoryEntry,
  OutboxInsert,
  OutboxListFilter,
  OutboxRecord,
  OutboxRepository,
  OutboxState,
  PlatformStatusReport,
  PlatformStatusResult,
  RecoverySummary,
  RenderedText,
  StreamStart,
} from "../../../outbox/types.ts";
import { targetKey } from "../../../outbox/types.ts";
import { newId } from "../../util/ids.ts";
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
  historyJson,
  holdsChatSql,
  isFinal,
  isFinalInsert,
  mediaJson,
  OPEN_STATES_SQL,
  type OperatorTarget,
  type OutboxRow,
  presentationJson,
  promptInserts,
  recoveryOf,
  STATUS_WAIT_ENDED,
  streamKey,
  toOutboxRecord,
} from "../outbox-records.ts";
import { placeholders } from "./database.ts";

export type { AnswerDelivery, AnswerDeliveryResult } from "../outbox-records.ts";

/** Version 1 of the meaning of outbox rows. Bump it, and document the change here, when that meaning changes. */
export const OUTBOX_SCHEMA_VERSION = 1;

/**
 * The outbox table. `ordinal` is the causal order within (channel, account, target); the partial
 * index serves "head of each target" over the records that still block their target.
 */
export const OUTBOX_SCHEMA_SQL = `
CREATE TABLE outbox (
  id TEXT PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  account TEXT NOT NULL,
  target TEXT NOT NULL,
  reply_to TEXT,
  ordinal INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('message', 'stream')),
  markdown TEXT NOT NULL,
  final INTEGER NOT NULL CHECK (final IN (0, 1)),
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'ambiguous', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at_ms INTEGER NOT NULL,
  rendered TEXT,
  format TEXT CHECK (format IN ('rich', 'plain')),
  chunks_delivered INTEGER NOT NULL DEFAULT 0,
  receipt TEXT,
  last_error TEXT,
  history TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  UNIQUE (channel, account, target, ordinal)
);
CREATE INDEX outbox_open_by_target ON outbox (channel, account, target, ordinal)
  WHERE state IN ('pending', 'sending', 'ambiguous');
CREATE INDEX outbox_by_conversation ON outbox (conversation_id, state);
CREATE INDEX outbox_by_run ON outbox (run_id);
CREATE INDEX outbox_sending ON outbox (state) WHERE state = 'sending';
`;

/** Part of migration 9: a message record's buttons, or the earlier record it edits (JSON). */
export const OUTBOX_PRESENTATION_SQL = "ALTER TABLE outbox ADD COLUMN presentation TEXT;";

/** Migration 16 (outbox-media): the file a message record delivers (JSON OutboxMedia). */
export const OUTBOX_MEDIA_SQL = "ALTER TABLE outbox ADD COLUMN media TEXT;";

/**
 * Migration 7: an ambiguous record's `next_attempt_at_ms` says until when it holds back its chat.
 * Records already ambiguous were left to an operator, so they keep holding until one decides.
 */
export const AMBIGUOUS_HOLDS_SQL = `UPDATE outbox SET next_attempt_at_ms = ${HOLD_FOREVER_MS} WHERE state = 'ambiguous';`;

function getRow(db: Database, idOrKey: string): OutboxRow | null {
  return db.query("SELECT * FROM outbox WHERE id = ? OR key = ?").get(idOrKey, idOrKey) as OutboxRow | null;
}

function hasEarlierOpenRecord(
  db: Database,
  row: Pick<OutboxRow, "channel" | "account" | "target" | "ordinal">,
  nowMs: number,
): boolean {
  return (
    db
      .query(
        `SELECT 1 FROM outbox WHERE channel = ? AND account = ? AND target = ? AND ordinal < ?
         AND ${holdsChatSql("", "?")} LIMIT 1`,
      )
      .get(row.channel, row.account, row.target, row.ordinal, nowMs) !== null
  );
}

/**
 * Inserts outbox records inside the caller's open transaction (the run's terminal commit).
 * Assigns each the next ordinal of its target; a key that already exists is skipped, so a
 * replayed commit enqueues nothing twice. Returns the ids of records actually inserted.
 */
export function insertOutboxRecordsSync(
  db: Database,
  inserts: readonly OutboxInsert[],
  nowMs: number,
): string[] {
  const inserted: string[] = [];
  for (const insert of inserts) {
    assertInsertable(insert);
    const exists = db.query("SELECT 1 FROM outbox WHERE key = ?").get(insert.key);
    if (exists) continue;
    const { next } = db
      .query(
        "SELECT COALESCE(MAX(ordinal), 0) + 1 AS next FROM outbox WHERE channel = ? AND account = ? AND target = ?",
      )
      .get(insert.channel, insert.account, insert.target) as { next: number };
    const id = insert.id ?? newId("obx", nowMs);
    db.query(
      `INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, reply_to, ordinal, kind,
         markdown, final, state, attempts, next_attempt_at_ms, history, presentation, media, created_at_ms, updated_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      insert.key,
      insert.runId,
      insert.conversationId,
      insert.channel,
      insert.account,
      insert.target,
      insert.replyTo ?? null,
      next,
      insert.kind,
      insert.markdown,
      isFinalInsert(insert) ? 1 : 0,
      nowMs,
      enqueuedHistoryJson(nowMs),
      presentationJson(insert),
      mediaJson(insert),
      nowMs,
      nowMs,
    );
    inserted.push(id);
  }
  return inserted;
}

/**
 * Sets a stream record's final text inside the caller's open transaction (the run's terminal
 * commit). Its state is untouched: a live stream still owns it, or the worker will deliver it.
 * False when there is no stream record with `key` (the run never streamed: insert a message).
 */
export function finalizeStreamRecordSync(
  db: Database,
  key: string,
  markdown: string,
  nowMs: number,
): boolean {
  const result = db
    .query(
      `UPDATE outbox SET markdown = ?, final = 1, updated_at_ms = ?, history = json_insert(history, '$[#]', json(?))
       WHERE key = ? AND kind = 'stream' AND final = 0`,
    )
    .run(markdown, nowMs, historyJson(history.finalized(nowMs)), key);
  if (result.changes === 1) return true;
  return db.query("SELECT 1 FROM outbox WHERE key = ? AND kind = 'stream'").get(key) !== null;
}

/**
 * The terminal commit's one call, inside its transaction: finalises the run's stream record when
 * it streamed, else enqueues the answer as `<runId>:0`. Because the stream's start refuses a run
 * that already has records, exactly one of the two ever exists.
 */
export function commitAnswerDeliverySync(
  db: Database,
  answer: AnswerDelivery,
  nowMs: number,
): AnswerDeliveryResult {
  const markdown = answerMarkdown(answer);
  const outcome: AnswerDeliveryResult = finalizeStreamRecordSync(db, streamKey(answer.runId), markdown, nowMs)
    ? "stream-finalized"
    : markdown.trim() === ""
      ? "nothing-to-send"
      : "enqueued";
  if (outcome === "enqueued") insertOutboxRecordsSync(db, [answerInsert(answer, markdown)], nowMs);
  insertOutboxRecordsSync(db, promptInserts(answer), nowMs);
  return outcome;
}

type Column =
  | "attempts"
  | "next_attempt_at_ms"
  | "rendered"
  | "format"
  | "chunks_delivered"
  | "receipt"
  | "last_error";

interface TransitionRequest {
  id: string;
  to: OutboxState;
  /** Compare-and-set: the update applies only while the record is in one of these. */
  from: readonly OutboxState[];
  set?: Partial<Record<Column, string | number | null>>;
  /** Extra SQL condition (no user input). */
  where?: string;
  whereParams?: (string | number)[];
  entry: OutboxHistoryEntry;
  nowMs: number;
}

function transition(db: Database, request: TransitionRequest): boolean {
  return transitioned(db, request) !== null;
}

/** Moves a record between states; the row as it is now, or null when it was not in `from`. */
function transitioned(db: Database, request: TransitionRequest): OutboxRow | null {
  for (const from of request.from) assertTransition(request.id, from, request.to);
  const assignments = Object.entries(request.set ?? {});
  const sql = `UPDATE outbox SET state = ?, updated_at_ms = ?, history = json_insert(history, '$[#]', json(?))${assignments
    .map(([column]) => `, ${column} = ?`)
    .join("")}
    WHERE id = ? AND state IN (${placeholders(request.from.length)})${request.where ? ` AND ${request.where}` : ""}
    RETURNING *`;
  return db
    .query(sql)
    .get(
      request.to,
      request.nowMs,
      historyJson(request.entry),
      ...assignments.map(([, value]) => value ?? null),
      request.id,
      ...request.from,
      ...(request.whereParams ?? []),
    ) as OutboxRow | null;
}

/** The outbox over one SQLite database (WAL, busy_timeout set by whoever opened it). */
export class SqliteOutboxRepository implements OutboxRepository {
  constructor(private readonly db: Database) {}

  async insert(inserts: OutboxInsert[], nowMs: number): Promise<string[]> {
    return this.write(() => insertOutboxRecordsSync(this.db, inserts, nowMs));
  }

  async nextDeliverable(
    nowMs: number,
    options: { limit: number; channels: readonly ChannelName[]; excludeTargets?: ReadonlySet<string> },
  ): Promise<OutboxRecord[]> {
    if (options.channels.length === 0 || options.limit <= 0) return [];
    const excluded = options.excludeTargets ?? new Set<string>();
    const rows = this.db
      .query(
        `${headsSql(options.channels.length)} AND o.next_attempt_at_ms <= ?
         ORDER BY o.next_attempt_at_ms, o.created_at_ms LIMIT ?`,
      )
      .all(...options.channels, nowMs, nowMs, options.limit + excluded.size) as OutboxRow[];
    return rows
      .map(toOutboxRecord)
      .filter((record) => !excluded.has(targetKey(record)))
      .slice(0, options.limit);
  }

  async nextWakeAtMs(channels: readonly ChannelName[], nowMs: number): Promise<number | null> {
    if (channels.length === 0) return null;
    const row = this.db
      .query(
        `SELECT MIN(at) AS at FROM (
           SELECT MIN(o.next_attempt_at_ms) AS at FROM (${headsSql(channels.length)}) AS o
           UNION ALL
           SELECT MIN(next_attempt_at_ms) FROM outbox WHERE ${AMBIGUOUS_HOLD_ENDS_SQL}
             AND channel IN (${placeholders(channels.length)}))`,
      )
      .get(...channels, nowMs, nowMs, ...channels) as { at: number | null };
    return row.at;
  }

  async markSending(id: string, nowMs: number, rendered?: RenderedText): Promise<OutboxRecord | null> {
    return this.write(() => {
      const row = getRow(this.db, id);
      if (row?.state !== "pending") return null;
      const set: TransitionRequest["set"] = { attempts: row.attempts + 1 };
      if (rendered && row.kind === "message" && row.rendered === null)
        set.rendered = JSON.stringify(rendered);
      const moved = transitioned(this.db, {
        id: row.id,
        from: ["pending"],
        to: "sending",
        set,
        entry: history.sending(nowMs, row.attempts + 1),
        nowMs,
      });
      return moved ? toOutboxRecord(moved) : null;
    });
  }

  async recordChunkDelivered(
    id: string,
    chunkIndex: number,
    messageIds: string[],
    nowMs: number,
    last = false,
  ): Promise<boolean> {
    return this.write(() => {
      const row = getRow(this.db, id);
      if (row?.state !== "sending" || row.chunks_delivered !== chunkIndex) return false;
      const receipt = appendedReceiptJson(row.receipt, messageIds);
      const recorded =
        this.db
          .query(
            `UPDATE outbox SET chunks_delivered = ?, receipt = ?, updated_at_ms = ?,
               history = json_insert(history, '$[#]', json(?))
             WHERE id = ? AND state = 'sending' AND chunks_delivered = ?`,
          )
          .run(
            chunkIndex + 1,
            receipt,
            nowMs,
            historyJson(history.chunkDelivered(nowMs, chunkIndex, row.rendered)),
            id,
            chunkIndex,
          ).changes === 1;
      if (!recorded || !last) return recorded;
      const whole = JSON.parse(receipt) as SendReceipt;
      return transition(this.db, {
        id,
        from: ["sending"],
        to: "delivered",
        set: { last_error: null },
        where: "kind = 'message'",
        entry: history.delivered(nowMs, whole),
        nowMs,
      });
    });
  }

  async replaceRendered(id: string, rendered: RenderedText, nowMs: number): Promise<boolean> {
    return this.write(
      () =>
        this.db
          .query(
            `UPDATE outbox SET rendered = ?, updated_at_ms = ?, history = json_insert(history, '$[#]', json(?))
             WHERE id = ? AND kind = 'message' AND state = 'sending' AND chunks_delivered = 0`,
          )
          .run(JSON.stringify(rendered), nowMs, historyJson(history.fallback(nowMs, rendered)), id)
          .changes === 1,
    );
  }

  async recordStreamProgress(
    id: string,
    messageIds: string[],
    format: "rich" | "plain",
    nowMs: number,
  ): Promise<boolean> {
    return this.write(
      () =>
        this.db
          .query(
            `UPDATE outbox SET receipt = ?, format = ?, updated_at_ms = ?
             WHERE id = ? AND kind = 'stream' AND state = 'sending'`,
          )
          .run(JSON.stringify({ messageIds }), format, nowMs, id).changes === 1,
    );
  }

  async markDelivered(
    id: string,
    receipt: SendReceipt,
    nowMs: number,
    shownMarkdown?: string,
  ): Promise<boolean> {
    return this.write(() =>
      transition(this.db, {
        id,
        from: ["sending"],
        to: "delivered",
        set: { receipt: JSON.stringify(receipt), last_error: null },
        // A stream is delivered only when the chat shows its canonical final text.
        where: "(kind = 'message' OR (final = 1 AND markdown = ?))",
        whereParams: [shownMarkdown ?? ""],
        entry: history.delivered(nowMs, receipt),
        nowMs,
      }),
    );
  }

  async scheduleRetry(id: string, nextAttemptAtMs: number, error: string, nowMs: number): Promise<boolean> {
    return this.write(() =>
      transition(this.db, {
        id,
        from: ["sending"],
        to: "pending",
        set: { next_attempt_at_ms: nextAttemptAtMs, last_error: error },
        entry: history.retryScheduled(nowMs, nextAttemptAtMs, error),
        nowMs,
      }),
    );
  }

  async markFailed(id: string, reason: string, nowMs: number): Promise<boolean> {
    return this.write(() =>
      transition(this.db, {
        id,
        from: ["sending"],
        to: "failed",
        set: { last_error: reason },
        entry: history.failed(nowMs, reason),
        nowMs,
      }),
    );
  }

  async markAmbiguous(
    id: string,
    reason: string,
    nowMs: number,
    holdUntilMs = HOLD_FOREVER_MS,
  ): Promise<boolean> {
    return this.write(() =>
      transition(this.db, {
        id,
        from: ["sending"],
        to: "ambiguous",
        set: { last_error: reason, next_attempt_at_ms: holdUntilMs },
        entry: history.ambiguous(nowMs, reason),
        nowMs,
      }),
    );
  }

  async recoverInterrupted(
    idempotentChannels: ReadonlySet<ChannelName>,
    nowMs: number,
    holdUntilMs = HOLD_FOREVER_MS,
    statusWaits: ReadonlyMap<ChannelName, number> = new Map(),
  ): Promise<RecoverySummary> {
    return this.write(() => {
      const summary = emptyRecoverySummary();
      const rows = this.db
        .query("SELECT * FROM outbox WHERE state = 'sending' ORDER BY ordinal")
        .all() as OutboxRow[];
      for (const row of rows) {
        const recovery = recoveryOf(row, idempotentChannels, statusWaits);
        if (recovery.outcome === "awaitingStatus") {
          this.awaitStatus(row.id, recovery.reason, nowMs, nowMs + recovery.waitMs);
        } else if (recovery.outcome === "ambiguous") {
          transition(this.db, {
            id: row.id,
            from: ["sending"],
            to: "ambiguous",
            set: { last_error: recovery.reason, next_attempt_at_ms: holdUntilMs },
            entry: history.ambiguous(nowMs, recovery.reason),
            nowMs,
          });
        } else {
          this.requeue(row.id, nowMs, recovery.note);
        }
        summary[recovery.outcome].push(row.id);
      }
      return summary;
    });
  }

  async applyPlatformStatus(
    recordKey: string,
    chunk: number,
    report: PlatformStatusReport,
    nowMs: number,
  ): Promise<PlatformStatusResult> {
    return this.write((): PlatformStatusResult => {
      const row = getRow(this.db, recordKey);
      const record = row ? toOutboxRecord(row) : null;
      const decision = decidePlatformStatus(record, chunk, report);
      if (!decision.apply) return { applied: false, why: decision.why, record };
      const moved = transitioned(this.db, {
        id: row!.id,
        from: [decision.from],
        to: decision.to,
        set:
          decision.to === "delivered"
            ? {
                receipt: JSON.stringify(decision.receipt),
                last_error: null,
                chunks_delivered: chunk + 1,
              }
            : { last_error: decision.reason },
        entry: history.resolvedByStatus(nowMs, decision.note),
        nowMs,
      });
      return moved
        ? { applied: true, record: toOutboxRecord(moved) }
        : {
            applied: false,
            why: "the record changed meanwhile",
            record: toOutboxRecord(getRow(this.db, row!.id)!),
          };
    });
  }

  async awaitPlatformStatus(id: string, reason: string, nowMs: number, untilMs: number): Promise<boolean> {
    return this.write(() => this.awaitStatus(id, reason, nowMs, untilMs));
  }

  async expireStatusWaits(nowMs: number, holdUntilMs = HOLD_FOREVER_MS): Promise<string[]> {
    return this.write(() => {
      const rows = this.db
        .query(
          `SELECT id FROM outbox WHERE state = 'sending' AND kind = 'message'
             AND substr(last_error, 1, ?) = ? AND next_attempt_at_ms <= ? ORDER BY ordinal`,
        )
        .all(AWAITING_STATUS_PREFIX.length, AWAITING_STATUS_PREFIX, nowMs) as Array<{ id: string }>;
      return rows
        .filter(({ id }) =>
          transition(this.db, {
            id,
            from: ["sending"],
            to: "ambiguous",
            set: { last_error: STATUS_WAIT_ENDED, next_attempt_at_ms: holdUntilMs },
            entry: history.statusWaitEnded(nowMs, STATUS_WAIT_ENDED),
            nowMs,
          }),
        )
        .map(({ id }) => id);
    });
  }

  async beginStream(insert: Omit<OutboxInsert, "kind" | "key">, nowMs: number): Promise<StreamStart> {
    return this.write((): StreamStart => {
      const key = streamKey(insert.runId);
      let row = getRow(this.db, key);
      if (row === null) {
        // Files the run sent by a tool are not its answer: the answer may still stream after them.
        // Nor may a run that ended before its stream opened (superseded, with nothing to send) leave
        // an open stream at the head of its chat.
        if (
          this.db
            .query("SELECT 1 FROM outbox WHERE run_id = ? AND media IS NULL LIMIT 1")
            .get(insert.runId) ||
          this.db.query("SELECT 1 FROM runs WHERE id = ? AND finish_seq IS NOT NULL").get(insert.runId)
        ) {
          return { live: false, reason: "answered" };
        }
        insertOutboxRecordsSync(this.db, [{ ...insert, key, kind: "stream", final: false }], nowMs);
        row = getRow(this.db, key)!;
      }
      if (row.kind !== "stream" || row.state !== "pending" || isFinal(row)) {
        return { live: false, reason: "unavailable" };
      }
      if (hasEarlierOpenRecord(this.db, row, nowMs)) return { live: false, reason: "queued" };
      transition(this.db, {
        id: row.id,
        from: ["pending"],
        to: "sending",
        set: { attempts: row.attempts + 1 },
        entry: history.livePreview(nowMs),
        nowMs,
      });
      return {
        live: true,
        record: toOutboxRecord(getRow(this.db, row.id)!) as Extract<OutboxRecord, { kind: "stream" }>,
      };
    });
  }

  async list(filter: OutboxListFilter): Promise<OutboxRecord[]> {
    const rows = this.db
      .query(
        `SELECT * FROM outbox WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR conversation_id = ?2)
           AND (?4 IS NULL OR (channel = ?4 AND target = ?5))
         ORDER BY created_at_ms DESC, ordinal DESC LIMIT ?3`,
      )
      .all(
        filter.state ?? null,
        filter.conversationId ?? null,
        filter.limit ?? 100,
        filter.destination?.channel ?? null,
        filter.destination?.target ?? null,
      ) as OutboxRow[];
    return rows.map(toOutboxRecord);
  }

  async show(idOrKey: string): Promise<OutboxRecord | null> {
    const row = getRow(this.db, idOrKey);
    return row ? toOutboxRecord(row) : null;
  }

  async retry(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.operate(id, "pending", actor, "retry", note, nowMs, {
      attempts: 0,
      next_attempt_at_ms: nowMs,
    });
  }

  async resolve(
    id: string,
    outcome: "delivered" | "failed",
    actor: OutboxActor,
    note: string,
    nowMs: number,
  ): Promise<OutboxRecord> {
    return this.operate(id, outcome, actor, `resolve ${outcome}`, note, nowMs, {});
  }

  async cancel(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.operate(id, "cancelled", actor, "cancel", note, nowMs, {});
  }

  async counts(conversationId: string): Promise<OutboxCounts> {
    const row = this.db
      .query(
        `SELECT COALESCE(SUM(state IN ('pending', 'sending')), 0) AS waiting,
                COALESCE(SUM(state = 'ambiguous'), 0) AS ambiguous
         FROM outbox WHERE conversation_id = ?`,
      )
      .get(conversationId) as OutboxCounts;
    return { waiting: row.waiting, ambiguous: row.ambiguous };
  }

  private operate(
    id: string,
    to: OperatorTarget,
    actor: OutboxActor,
    action: string,
    note: string | undefined,
    nowMs: number,
    set: TransitionRequest["set"],
  ): OutboxRecord {
    return this.write(() => {
      const row = getRow(this.db, id);
      const from = checkOperatorAction(id, row, to);
      const entry = actorEntry(nowMs, actor, action, note);
      transition(this.db, { id: row!.id, from: [from], to, set, entry, nowMs });
      return toOutboxRecord(getRow(this.db, row!.id)!);
    });
  }

  /** Keeps a sending message waiting for the platform's report until `untilMs`. */
  private awaitStatus(id: string, reason: string, nowMs: number, untilMs: number): boolean {
    return (
      this.db
        .query(
          `UPDATE outbox SET next_attempt_at_ms = ?, last_error = ?, updated_at_ms = ?,
             history = json_insert(history, '$[#]', json(?))
           WHERE id = ? AND state = 'sending' AND kind = 'message'`,
        )
        .run(
          untilMs,
          awaitingStatusError(reason),
          nowMs,
          historyJson(history.awaitingStatus(nowMs, untilMs, reason)),
          id,
        ).changes === 1
    );
  }

  private requeue(id: string, nowMs: number, note: string): void {
    transition(this.db, {
      id,
      from: ["sending"],
      to: "pending",
      set: { next_attempt_at_ms: nowMs },
      entry: history.recovered(nowMs, note),
      nowMs,
    });
  }

  private write<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }
}

/**
 * An ambiguous record whose hold ends after the parameter: a wake-up time. It repeats the
 * open-records index's own condition: SQLite uses a partial index only for a query that states
 * it, and would otherwise read every record the channel ever had, twice for each reply.
 */
const AMBIGUOUS_HOLD_ENDS_SQL = `state IN ${OPEN_STATES_SQL} AND state = 'ambiguous'
  AND next_attempt_at_ms > ? AND next_attempt_at_ms < ${HOLD_FOREVER_MS}`;

/**
 * Head record of each target of `channelCount` channels that the worker may deliver; its
 * parameters are the channels, then the time at which holds are judged.
 */
function headsSql(channelCount: number): string {
  // CROSS JOIN keeps the heads (one per target, from the open-records index) as the outer loop;
  // left to itself the planner scans every pending record and probes the heads (~25 ms at 10,000).
  return `SELECT o.* FROM (SELECT channel, account, target, MIN(ordinal) AS ordinal FROM outbox
          WHERE channel IN (${placeholders(channelCount)}) AND ${holdsChatSql("", "?")}
          GROUP BY channel, account, target) h
    CROSS JOIN outbox o
    WHERE o.channel = h.channel AND o.account = h.account AND o.target = h.target AND o.ordinal = h.ordinal
      AND o.state = 'pending' AND o.final = 1`;
}
