import type { SQL, TransactionSQL } from "bun";
import type { ChannelName, SendReceipt } from "../../../channels/types.ts";
import { AWAITING_STATUS_PREFIX, decidePlatformStatus } from "../../../outbox/platform-status.ts";
import { assertTransition } from "../../../outbox/transitions.ts";
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
} from "../../../outbox/types.ts";
import { SwitchboardError } from "../../errors.ts";
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
  type OperatorTarget,
  type OutboxRow,
  presentationJson,
  promptInserts,
  recoveryOf,
  STATUS_WAIT_ENDED,
  streamKey,
  toOutboxRecord,
} from "../outbox-records.ts";

type Target = { channel: string; account: string; target: string };

/**
 * Serialises, per target and across processes, the writes that must see the target's records
 * settled: assigning an ordinal, a stream's start against its run's terminal commit, and every
 * move into `sending`. Held until the transaction ends. The single-key advisory lock space is
 * apart from the runtime's two-key ingress locks; a 64-bit hash collision only makes two targets
 * take turns.
 */
async function lockTargets(tx: SQL, targets: readonly Target[]): Promise<void> {
  // Sorted, so two transactions locking several targets cannot deadlock.
  const keys = [...new Set(targets.map((t) => `outbox:${JSON.stringify([t.channel, t.account, t.target])}`))];
  for (const key of keys.sort()) {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`;
  }
}

async function rowOf(sql: SQL, idOrKey: string): Promise<OutboxRow | null> {
  const [row] = await sql<OutboxRow[]>`SELECT * FROM outbox WHERE id = ${idOrKey} OR key = ${idOrKey}`;
  return row ?? null;
}

/** `history` with `entry` appended, kept as compact JSON text. */
function appendHistory(sql: SQL, ...entries: OutboxHistoryEntry[]) {
  return sql`left(history, -1) || ',' || ${entries.map(historyJson).join(",")} || ']'`;
}

/**
 * True when another record of the row's target (SQL alias `outbox`) holds the target at `nowMs`:
 * an earlier one that holds its chat, or any one being sent (a later one can be, after an operator
 * retried an earlier failed one). One process cannot see another's delivery lanes, so a claim
 * checks both.
 */
function targetHeld(sql: SQL, nowMs: number): SQL.Query<unknown> {
  return sql`EXISTS (SELECT 1 FROM outbox other
  WHERE other.channel = outbox.channel AND other.account = outbox.account AND other.target = outbox.target
    AND other.id <> outbox.id
    AND (other.state = 'sending' OR (other.ordinal < outbox.ordinal AND ${holdsChat(sql, "other.", nowMs)})))`;
}

/**
 * `holdsChatSql` with the time as a bound parameter. Bun's client prepares each new statement text
 * as a named statement the server keeps for the connection's lifetime, so a time written into the
 * text left one more prepared statement behind on every look of the outbox worker.
 */
function holdsChat(sql: SQL, alias: string, nowMs: number): SQL.Query<unknown> {
  const [before, after] = holdsChatSql(alias, NOW_MARK).split(NOW_MARK) as [string, string];
  return sql`${sql.unsafe(before)}${Math.trunc(nowMs)}${sql.unsafe(after)}`;
}
const NOW_MARK = "\u0000now\u0000";

/**
 * Inserts outbox records inside the caller's transaction (the run's terminal commit). Assigns
 * each the next ordinal of its target under the target's lock; a key that already exists is
 * skipped, so a replayed commit enqueues nothing twice. Returns the ids of records inserted.
 */
export async function insertOutboxRecords(
  tx: TransactionSQL,
  inserts: readonly OutboxInsert[],
  nowMs: number,
): Promise<string[]> {
  for (const insert of inserts) assertInsertable(insert);
  await lockTargets(tx, inserts);
  const inserted: string[] = [];
  for (const insert of inserts) {
    const id = insert.id ?? newId("obx", nowMs);
    const rows = await tx`
      INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, reply_to, ordinal, kind,
        markdown, final, state, attempts, next_attempt_at_ms, history, presentation, media, created_at_ms, updated_at_ms)
      VALUES (${id}, ${insert.key}, ${insert.runId}, ${insert.conversationId}, ${insert.channel},
        ${insert.account}, ${insert.target}, ${insert.replyTo ?? null},
        (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM outbox
         WHERE channel = ${insert.channel} AND account = ${insert.account} AND target = ${insert.target}),
        ${insert.kind}, ${storableText(insert.markdown)}, ${isFinalInsert(insert)}, 'pending', 0, ${nowMs},
        ${enqueuedHistoryJson(nowMs)}, ${presentationJson(insert)}, ${mediaJson(insert)}, ${nowMs}, ${nowMs})
      ON CONFLICT (key) DO NOTHING RETURNING id`;
    if (rows.length === 1) inserted.push(id);
  }
  return inserted;
}

/**
 * PostgreSQL text cannot hold U+0000, which no chat platform shows either; it is dropped on the
 * way in (and from the text a delivery is compared with), so a model that emits one cannot make
 * the terminal commit fail.
 */
const storableText = (text: string): string => text.replaceAll("\u0000", "");

/**
 * Sets a stream record's final text inside the caller's transaction (the run's terminal commit).
 * Its state is untouched: a live stream still owns it, or the worker will deliver it. False when
 * there is no stream record with `key` (the run never streamed: insert a message).
 */
export async function finalizeStreamRecord(
  tx: TransactionSQL,
  key: string,
  markdown: string,
  nowMs: number,
): Promise<boolean> {
  const updated = await tx`
    UPDATE outbox SET markdown = ${storableText(markdown)}, final = TRUE, updated_at_ms = ${nowMs},
      history = ${appendHistory(tx, history.finalized(nowMs))}
    WHERE key = ${key} AND kind = 'stream' AND NOT final`;
  if (updated.count === 1) return true;
  const [stream] = await tx`SELECT 1 FROM outbox WHERE key = ${key} AND kind = 'stream'`;
  return stream !== undefined;
}

/**
 * The terminal commit's one call, inside its transaction: finalises the run's stream record when
 * it streamed, else enqueues the answer as `<runId>:0`. The target's lock comes first, so a
 * stream starting at the same time either is finalised here or finds this answer and stays off:
 * exactly one of the two ever exists.
 */
export async function commitAnswerDelivery(
  tx: TransactionSQL,
  answer: AnswerDelivery,
  nowMs: number,
): Promise<AnswerDeliveryResult> {
  await lockTargets(tx, [answer]);
  const markdown = answerMarkdown(answer);
  const outcome: AnswerDeliveryResult = (await finalizeStreamRecord(
    tx,
    streamKey(answer.runId),
    markdown,
    nowMs,
  ))
    ? "stream-finalized"
    : markdown.trim() === ""
      ? "nothing-to-send"
      : "enqueued";
  if (outcome === "enqueued") await insertOutboxRecords(tx, [answerInsert(answer, markdown)], nowMs);
  await insertOutboxRecords(tx, promptInserts(answer), nowMs);
  return outcome;
}

interface TransitionRequest {
  id: string;
  to: OutboxState;
  /** Compare-and-set: the update applies only while the record is in one of these. */
  from: readonly OutboxState[];
  set?: {
    attempts?: number;
    next_attempt_at_ms?: number;
    rendered?: string;
    receipt?: string;
    last_error?: string | null;
    chunks_delivered?: number;
  };
  /** Further conditions, each a fragment starting with `AND`. */
  where?: (sql: SQL) => SQL.Query<unknown>;
  entry: OutboxHistoryEntry;
  nowMs: number;
}

/** One record's compare-and-set state change; the changed row, or null when the record had moved on. */
async function transition(sql: SQL, request: TransitionRequest): Promise<OutboxRow | null> {
  for (const from of request.from) assertTransition(request.id, from, request.to);
  const set = request.set ?? {};
  const [row] = await sql<OutboxRow[]>`
    UPDATE outbox SET state = ${request.to}, updated_at_ms = ${request.nowMs},
      history = ${appendHistory(sql, request.entry)}${Object.keys(set).length > 0 ? sql`, ${sql(set)}` : sql``}
    WHERE id = ${request.id} AND state IN ${sql([...request.from])} ${request.where?.(sql) ?? sql``}
    RETURNING *`;
  return row ?? null;
}

/** Keeps a sending message waiting for the platform's report until `untilMs`; false if it moved on. */
async function awaitStatus(
  sql: SQL,
  id: string,
  reason: string,
  nowMs: number,
  untilMs: number,
): Promise<boolean> {
  const updated = await sql`
    UPDATE outbox SET next_attempt_at_ms = ${untilMs}, last_error = ${awaitingStatusError(reason)},
      updated_at_ms = ${nowMs}, history = ${appendHistory(sql, history.awaitingStatus(nowMs, untilMs, reason))}
    WHERE id = ${id} AND state = 'sending' AND kind = 'message'`;
  return updated.count === 1;
}

/**
 * Head record of each target of `channels` that the worker may deliver at `nowMs`, picked as in
 * SQLite, except that a target with any record being sent yields nothing: another process may own it.
 */
function heads(sql: SQL, channels: readonly ChannelName[], nowMs: number) {
  return sql`
    SELECT o.* FROM (
      SELECT channel, account, target, MIN(ordinal) AS ordinal FROM outbox
      WHERE ${holdsChat(sql, "", nowMs)} AND channel IN ${sql([...channels])}
      GROUP BY channel, account, target
      HAVING count(*) FILTER (WHERE state = 'sending') = 0
    ) h
    JOIN outbox o ON o.channel = h.channel AND o.account = h.account AND o.target = h.target
      AND o.ordinal = h.ordinal
    WHERE o.state = 'pending' AND o.final`;
}

/**
 * The outbox on PostgreSQL, for several gateway processes sharing one database. Every state
 * change is a compare-and-set on the state it expects; moves into `sending` also take the
 * target's advisory lock and check that nothing else holds the target, so two processes never
 * send one record, or two records of one chat, at once. Multi-statement changes run in READ
 * COMMITTED transactions: a statement after a lock wait sees what the previous holder committed.
 */
export class PostgresOutboxRepository implements OutboxRepository {
  constructor(private readonly sql: SQL) {}

  insert(inserts: OutboxInsert[], nowMs: number): Promise<string[]> {
    return this.write((tx) => insertOutboxRecords(tx, inserts, nowMs));
  }

  async nextDeliverable(
    nowMs: number,
    options: { limit: number; channels: readonly ChannelName[]; excludeTargets?: ReadonlySet<string> },
  ): Promise<OutboxRecord[]> {
    if (options.channels.length === 0 || options.limit <= 0) return [];
    const excluded = options.excludeTargets ?? new Set<string>();
    const rows = await this.sql<OutboxRow[]>`
      SELECT * FROM (${heads(this.sql, options.channels, nowMs)}) o WHERE o.next_attempt_at_ms <= ${nowMs}
      ORDER BY o.next_attempt_at_ms, o.created_at_ms, o.id LIMIT ${options.limit + excluded.size}`;
    return rows
      .map(toOutboxRecord)
      .filter((record) => !excluded.has(targetKey(record)))
      .slice(0, options.limit);
  }

  async nextWakeAtMs(channels: readonly ChannelName[], nowMs: number): Promise<number | null> {
    if (channels.length === 0) return null;
    const [row] = await this.sql<Array<{ at: string | null }>>`
      SELECT LEAST(
        (SELECT MIN(o.next_attempt_at_ms) FROM (${heads(this.sql, channels, nowMs)}) o),
        (SELECT MIN(next_attempt_at_ms) FROM outbox WHERE state = 'ambiguous'
          AND next_attempt_at_ms > ${nowMs} AND next_attempt_at_ms < ${HOLD_FOREVER_MS}
          AND channel IN ${this.sql([...channels])})) AS at`;
    return row?.at == null ? null : Number(row.at);
  }

  /**
   * Besides SQLite's check that the record is still pending, the claim holds only while it is
   * still deliverable (due, final, and nothing else holds its target): a record another process
   * read before it moved on is not sent out of turn.
   */
  markSending(id: string, nowMs: number, rendered?: RenderedText): Promise<OutboxRecord | null> {
    return this.write(async (tx) => {
      const row = await rowOf(tx, id);
      if (row?.state !== "pending") return null;
      await lockTargets(tx, [row]);
      const set: TransitionRequest["set"] = { attempts: row.attempts + 1 };
      if (rendered && row.kind === "message" && row.rendered === null)
        set.rendered = JSON.stringify(rendered);
      const moved = await transition(tx, {
        id: row.id,
        from: ["pending"],
        to: "sending",
        set,
        where: (sql) => sql`AND attempts = ${row.attempts} AND next_attempt_at_ms <= ${nowMs} AND final
          AND NOT ${targetHeld(sql, nowMs)}`,
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
    const row = await rowOf(this.sql, id);
    if (row?.state !== "sending" || row.chunks_delivered !== chunkIndex) return false;
    const receipt = appendedReceiptJson(row.receipt, messageIds);
    const entries = [history.chunkDelivered(nowMs, chunkIndex, row.rendered)];
    if (last) {
      assertTransition(id, "sending", "delivered");
      entries.push(history.delivered(nowMs, JSON.parse(receipt) as SendReceipt));
    }
    // One statement: with `last`, the chunk and the delivery commit together.
    const updated = await this.sql`
      UPDATE outbox SET chunks_delivered = ${chunkIndex + 1}, receipt = ${receipt}, updated_at_ms = ${nowMs},
        history = ${appendHistory(this.sql, ...entries)}
        ${last ? this.sql`, state = 'delivered', last_error = NULL` : this.sql``}
      WHERE id = ${id} AND state = 'sending' AND chunks_delivered = ${chunkIndex}
        ${last ? this.sql`AND kind = 'message'` : this.sql``}`;
    return updated.count === 1;
  }

  async replaceRendered(id: string, rendered: RenderedText, nowMs: number): Promise<boolean> {
    const updated = await this.sql`
      UPDATE outbox SET rendered = ${JSON.stringify(rendered)}, updated_at_ms = ${nowMs},
        history = ${appendHistory(this.sql, history.fallback(nowMs, rendered))}
      WHERE id = ${id} AND kind = 'message' AND state = 'sending' AND chunks_delivered = 0`;
    return updated.count === 1;
  }

  async recordStreamProgress(
    id: string,
    messageIds: string[],
    format: "rich" | "plain",
    nowMs: number,
  ): Promise<boolean> {
    const updated = await this.sql`
      UPDATE outbox SET receipt = ${JSON.stringify({ messageIds })}, format = ${format}, updated_at_ms = ${nowMs}
      WHERE id = ${id} AND kind = 'stream' AND state = 'sending'`;
    return updated.count === 1;
  }

  async markDelivered(
    id: string,
    receipt: SendReceipt,
    nowMs: number,
    shownMarkdown?: string,
  ): Promise<boolean> {
    const moved = await transition(this.sql, {
      id,
      from: ["sending"],
      to: "delivered",
      set: { receipt: JSON.stringify(receipt), last_error: null },
      // A stream is delivered only when the chat shows its canonical final text.
      where: (sql) =>
        sql`AND (kind = 'message' OR (final AND markdown = ${storableText(shownMarkdown ?? "")}))`,
      entry: history.delivered(nowMs, receipt),
      nowMs,
    });
    return moved !== null;
  }

  async scheduleRetry(id: string, nextAttemptAtMs: number, error: string, nowMs: number): Promise<boolean> {
    const moved = await transition(this.sql, {
      id,
      from: ["sending"],
      to: "pending",
      set: { next_attempt_at_ms: nextAttemptAtMs, last_error: error },
      entry: history.retryScheduled(nowMs, nextAttemptAtMs, error),
      nowMs,
    });
    return moved !== null;
  }

  async markFailed(id: string, reason: string, nowMs: number): Promise<boolean> {
    const moved = await transition(this.sql, {
      id,
      from: ["sending"],
      to: "failed",
      set: { last_error: reason },
      entry: history.failed(nowMs, reason),
      nowMs,
    });
    return moved !== null;
  }

  async markAmbiguous(
    id: string,
    reason: string,
    nowMs: number,
    holdUntilMs = HOLD_FOREVER_MS,
  ): Promise<boolean> {
    const moved = await transition(this.sql, {
      id,
      from: ["sending"],
      to: "ambiguous",
      set: { last_error: reason, next_attempt_at_ms: holdUntilMs },
      entry: history.ambiguous(nowMs, reason),
      nowMs,
    });
    return moved !== null;
  }

  recoverInterrupted(
    idempotentChannels: ReadonlySet<ChannelName>,
    nowMs: number,
    holdUntilMs = HOLD_FOREVER_MS,
    statusWaits: ReadonlyMap<ChannelName, number> = new Map(),
  ): Promise<RecoverySummary> {
    // Single-process start-up only: several processes would need owner-scoped recovery (future work).
    return this.write(async (tx) => {
      const summary = emptyRecoverySummary();
      // `id` (time-ordered) breaks ties in insertion order, as SQLite's rowid does.
      const rows = await tx<OutboxRow[]>`SELECT * FROM outbox WHERE state = 'sending' ORDER BY ordinal, id`;
      for (const row of rows) {
        const recovery = recoveryOf(row, idempotentChannels, statusWaits);
        if (recovery.outcome === "awaitingStatus") {
          if (await awaitStatus(tx, row.id, recovery.reason, nowMs, nowMs + recovery.waitMs))
            summary.awaitingStatus.push(row.id);
          continue;
        }
        const moved =
          recovery.outcome === "ambiguous"
            ? await transition(tx, {
                id: row.id,
                from: ["sending"],
                to: "ambiguous",
                set: { last_error: recovery.reason, next_attempt_at_ms: holdUntilMs },
                entry: history.ambiguous(nowMs, recovery.reason),
                nowMs,
              })
            : await transition(tx, {
                id: row.id,
                from: ["sending"],
                to: "pending",
                set: { next_attempt_at_ms: nowMs },
                entry: history.recovered(nowMs, recovery.note),
                nowMs,
              });
        if (moved) summary[recovery.outcome].push(row.id);
      }
      return summary;
    });
  }

  applyPlatformStatus(
    recordKey: string,
    chunk: number,
    report: PlatformStatusReport,
    nowMs: number,
  ): Promise<PlatformStatusResult> {
    return this.write(async (tx): Promise<PlatformStatusResult> => {
      const [row] = await tx<OutboxRow[]>`
        SELECT * FROM outbox WHERE id = ${recordKey} OR key = ${recordKey} LIMIT 1 FOR UPDATE`;
      const record = row ? toOutboxRecord(row) : null;
      const decision = decidePlatformStatus(record, chunk, report);
      if (!decision.apply) return { applied: false, why: decision.why, record };
      const moved = await transition(tx, {
        id: row!.id,
        from: [decision.from],
        to: decision.to,
        set:
          decision.to === "delivered"
            ? { receipt: JSON.stringify(decision.receipt), last_error: null, chunks_delivered: chunk + 1 }
            : { last_error: decision.reason },
        entry: history.resolvedByStatus(nowMs, decision.note),
        nowMs,
      });
      return moved
        ? { applied: true, record: toOutboxRecord(moved) }
        : { applied: false, why: "the record changed meanwhile", record };
    });
  }

  async awaitPlatformStatus(id: string, reason: string, nowMs: number, untilMs: number): Promise<boolean> {
    return await awaitStatus(this.sql, id, reason, nowMs, untilMs);
  }

  expireStatusWaits(nowMs: number, holdUntilMs = HOLD_FOREVER_MS): Promise<string[]> {
    return this.write(async (tx) => {
      const rows = await tx<Array<{ id: string }>>`
        SELECT id FROM outbox WHERE state = 'sending' AND kind = 'message'
          AND left(last_error, ${AWAITING_STATUS_PREFIX.length}) = ${AWAITING_STATUS_PREFIX}
          AND next_attempt_at_ms <= ${nowMs}
        ORDER BY ordinal, id FOR UPDATE`;
      const expired: string[] = [];
      for (const { id } of rows) {
        const moved = await transition(tx, {
          id,
          from: ["sending"],
          to: "ambiguous",
          set: { last_error: STATUS_WAIT_ENDED, next_attempt_at_ms: holdUntilMs },
          entry: history.statusWaitEnded(nowMs, STATUS_WAIT_ENDED),
          nowMs,
        });
        if (moved) expired.push(id);
      }
      return expired;
    });
  }

  beginStream(insert: Omit<OutboxInsert, "kind" | "key">, nowMs: number): Promise<StreamStart> {
    return this.write(async (tx): Promise<StreamStart> => {
      // A run ended without its owner (superseded, stopped while queued) finalises its stream
      // without the target's lock. Its row lock orders the two instead: an ending in progress is
      // waited for and seen, and one that starts after this waits for the stream to be there to
      // finalise. Taken before the target's lock, in the terminal commit's order (run, then target).
      const [run] = await tx<Array<{ ended: boolean }>>`
        SELECT finish_seq IS NOT NULL AS ended FROM runs WHERE id = ${insert.runId} FOR SHARE`;
      // Before anything is read: the run's terminal commit takes the same lock (see commitAnswerDelivery).
      await lockTargets(tx, [insert]);
      const key = streamKey(insert.runId);
      let row = await rowOf(tx, key);
      if (row === null) {
        // Files the run sent by a tool are not its answer: the answer may still stream after them.
        const [answered] =
          await tx`SELECT 1 FROM outbox WHERE run_id = ${insert.runId} AND media IS NULL LIMIT 1`;
        // Nor may a run that ended before its stream opened (superseded, with nothing to send) leave
        // an open stream at the head of its chat.
        if (answered || run?.ended) return { live: false, reason: "answered" };
        await insertOutboxRecords(tx, [{ ...insert, key, kind: "stream", final: false }], nowMs);
        row = (await rowOf(tx, key))!;
      }
      if (row.kind !== "stream" || row.state !== "pending" || isFinal(row)) {
        return { live: false, reason: "unavailable" };
      }
      const [{ held }] = (await tx`
        SELECT ${targetHeld(tx, nowMs)} AS held FROM outbox WHERE id = ${row.id}`) as [{ held: boolean }];
      if (held) return { live: false, reason: "queued" };
      const moved = await transition(tx, {
        id: row.id,
        from: ["pending"],
        to: "sending",
        set: { attempts: row.attempts + 1 },
        entry: history.livePreview(nowMs),
        nowMs,
      });
      // Only an operator's cancel, committed since the read, can have moved it.
      if (!moved) return { live: false, reason: "unavailable" };
      return { live: true, record: toOutboxRecord(moved) as OutboxStreamRecord };
    });
  }

  async list(filter: OutboxListFilter): Promise<OutboxRecord[]> {
    const state = filter.state ?? null;
    const conversationId = filter.conversationId ?? null;
    const channel = filter.destination?.channel ?? null;
    const target = filter.destination?.target ?? null;
    const rows = await this.sql<OutboxRow[]>`
      SELECT * FROM outbox
      WHERE (${state}::text IS NULL OR state = ${state}) AND (${conversationId}::text IS NULL OR conversation_id = ${conversationId})
        AND (${channel}::text IS NULL OR (channel = ${channel} AND target = ${target}))
      ORDER BY created_at_ms DESC, ordinal DESC, id DESC LIMIT ${filter.limit ?? 100}`;
    return rows.map(toOutboxRecord);
  }

  async show(idOrKey: string): Promise<OutboxRecord | null> {
    const row = await rowOf(this.sql, idOrKey);
    return row ? toOutboxRecord(row) : null;
  }

  retry(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.operate(id, "pending", actorEntry(nowMs, actor, "retry", note), {
      attempts: 0,
      next_attempt_at_ms: nowMs,
    });
  }

  resolve(
    id: string,
    outcome: "delivered" | "failed",
    actor: OutboxActor,
    note: string,
    nowMs: number,
  ): Promise<OutboxRecord> {
    return this.operate(id, outcome, actorEntry(nowMs, actor, `resolve ${outcome}`, note), {});
  }

  cancel(id: string, actor: OutboxActor, nowMs: number, note?: string): Promise<OutboxRecord> {
    return this.operate(id, "cancelled", actorEntry(nowMs, actor, "cancel", note), {});
  }

  async counts(conversationId: string): Promise<OutboxCounts> {
    const [row] = await this.sql<Array<{ waiting: string; ambiguous: string }>>`
      SELECT count(*) FILTER (WHERE state IN ('pending', 'sending')) AS waiting,
             count(*) FILTER (WHERE state = 'ambiguous') AS ambiguous
      FROM outbox WHERE conversation_id = ${conversationId}`;
    return { waiting: Number(row!.waiting), ambiguous: Number(row!.ambiguous) };
  }

  /** The row lock keeps the record still between the checks and the compare-and-set. */
  private operate(
    id: string,
    to: OperatorTarget,
    entry: OutboxHistoryEntry,
    set: TransitionRequest["set"],
  ): Promise<OutboxRecord> {
    return this.write(async (tx) => {
      const [row] = await tx<OutboxRow[]>`
        SELECT * FROM outbox WHERE id = ${id} OR key = ${id} LIMIT 1 FOR UPDATE`;
      const from = checkOperatorAction(id, row, to);
      const moved = await transition(tx, { id: row!.id, from: [from], to, set, entry, nowMs: entry.atMs });
      if (!moved) {
        throw new SwitchboardError(
          "version_conflict",
          `Outbox record ${row!.id} changed while it was being updated; show it again, then retry.`,
        );
      }
      return toOutboxRecord(moved);
    });
  }

  private async write<T>(work: (tx: TransactionSQL) => Promise<T>): Promise<T> {
    return (await this.sql.begin("isolation level read committed", work)) as T;
  }
}
