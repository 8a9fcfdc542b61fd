import type { SQL } from "bun";
import type { ChannelName } from "../../../channels/types.ts";
import { AWAITING_STATUS_PREFIX } from "../../../outbox/platform-status.ts";
import { assertTransition } from "../../../outbox/transitions.ts";
import type { OutboxHistoryEntry } from "../../../outbox/types.ts";
import { HOLD_FOREVER_MS, historyJson, holdsChatSql, type OutboxRow } from "../outbox-records.ts";
import {
  EngineOutboxRepository,
  type OutboxSteps,
  type OutboxTarget,
  type OutboxWrite,
  type RecordChange,
} from "../outbox-writes.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";

/**
 * Serialises, per target and across processes, the writes that must see the target's records
 * settled: assigning an ordinal, a stream's start against its run's terminal commit, and every
 * move into `sending`. Held until the transaction ends. The single-key advisory lock space is
 * apart from the runtime's two-key ingress locks; a 64-bit hash collision only makes two targets
 * take turns.
 */
async function lockTargets(tx: SQL, targets: readonly OutboxTarget[]): Promise<void> {
  // Sorted, so two transactions locking several targets cannot deadlock.
  const keys = [...new Set(targets.map((t) => `outbox:${JSON.stringify([t.channel, t.account, t.target])}`))];
  for (const key of keys.sort()) {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`;
  }
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
 * PostgreSQL text cannot hold U+0000, which no chat platform shows either; it is dropped on the
 * way in (and from the text a delivery is compared with), so a model that emits one cannot make
 * the terminal commit fail.
 */
const storableText = (text: string): string => text.replaceAll("\u0000", "");

/** A change's UPDATE statement (see outbox-writes.ts, RecordChange). */
function changeSql(sql: SQL, change: RecordChange, returning: boolean) {
  const { to, from, where = {}, entries, nowMs } = change;
  if (to !== undefined) for (const state of from) assertTransition(change.id, state, to);
  const set = change.set ?? {};
  const none = sql``;
  return sql<OutboxRow[]>`
    UPDATE outbox SET updated_at_ms = ${nowMs}${to === undefined ? none : sql`, state = ${to}`}
      ${entries.length > 0 ? sql`, history = ${appendHistory(sql, ...entries)}` : none}
      ${Object.keys(set).length > 0 ? sql`, ${sql(set)}` : none}
    WHERE id = ${change.id} AND state IN ${sql([...from])}
      ${where.kind === undefined ? none : sql`AND kind = ${where.kind}`}
      ${where.chunksDelivered === undefined ? none : sql`AND chunks_delivered = ${where.chunksDelivered}`}
      ${
        where.streamShows === undefined
          ? none
          : sql`AND (kind = 'message' OR (final AND markdown = ${storableText(where.streamShows)}))`
      }
      ${
        where.claim === undefined
          ? none
          : sql`AND attempts = ${where.claim.attempts} AND next_attempt_at_ms <= ${where.claim.nowMs} AND final
              AND NOT ${targetHeld(sql, where.claim.nowMs)}`
      }
    ${returning ? sql`RETURNING *` : none}`;
}

/**
 * The outbox's steps (see outbox-writes.ts) on `sql`: a READ COMMITTED transaction, where a
 * statement after a lock wait sees what the previous holder committed, or the pool (see apply).
 * The runtime store's terminal commit runs the outbox's procedures on them in its own transaction.
 */
export function postgresOutboxSteps(sql: SQL): AsyncSteps<OutboxSteps> {
  return {
    row: async (idOrKey) => {
      const [row] = await sql<OutboxRow[]>`SELECT * FROM outbox WHERE id = ${idOrKey} OR key = ${idOrKey}`;
      return row ?? null;
    },
    lockRow: async (idOrKey) => {
      const [row] = await sql<OutboxRow[]>`
        SELECT * FROM outbox WHERE id = ${idOrKey} OR key = ${idOrKey} LIMIT 1 FOR UPDATE`;
      return row ?? null;
    },
    lockTargets: (targets) => lockTargets(sql, targets),
    insertRecord: async (record, nowMs) => {
      const rows = await sql`
        INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, reply_to, ordinal, kind,
          markdown, final, state, attempts, next_attempt_at_ms, history, presentation, media, created_at_ms, updated_at_ms)
        VALUES (${record.id}, ${record.key}, ${record.runId}, ${record.conversationId}, ${record.channel},
          ${record.account}, ${record.target}, ${record.replyTo},
          (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM outbox
           WHERE channel = ${record.channel} AND account = ${record.account} AND target = ${record.target}),
          ${record.kind}, ${storableText(record.markdown)}, ${record.final}, 'pending', 0, ${nowMs},
          ${record.history}, ${record.presentation}, ${record.media}, ${nowMs}, ${nowMs})
        ON CONFLICT (key) DO NOTHING RETURNING id`;
      return rows.length === 1;
    },
    finalizeStream: async (key, markdown, entry, nowMs) => {
      const updated = await sql`
        UPDATE outbox SET markdown = ${storableText(markdown)}, final = TRUE, updated_at_ms = ${nowMs},
          history = ${appendHistory(sql, entry)}
        WHERE key = ${key} AND kind = 'stream' AND NOT final`;
      return updated.count === 1;
    },
    hasStream: async (key) => {
      const [stream] = await sql`SELECT 1 FROM outbox WHERE key = ${key} AND kind = 'stream'`;
      return stream !== undefined;
    },
    change: async (change) => (await changeSql(sql, change, false)).count === 1,
    changed: async (change) => {
      const [row] = await changeSql(sql, change, true);
      return row ?? null;
    },
    // `id` (time-ordered) breaks ties in insertion order, as SQLite's rowid does.
    sendingRows: () => sql<OutboxRow[]>`SELECT * FROM outbox WHERE state = 'sending' ORDER BY ordinal, id`,
    statusWaitsOver: async (nowMs) => {
      const rows = await sql<Array<{ id: string }>>`
        SELECT id FROM outbox WHERE state = 'sending' AND kind = 'message'
          AND left(last_error, ${AWAITING_STATUS_PREFIX.length}) = ${AWAITING_STATUS_PREFIX}
          AND next_attempt_at_ms <= ${nowMs}
        ORDER BY ordinal, id FOR UPDATE`;
      return rows.map(({ id }) => id);
    },
    // A run ended without its owner (superseded, stopped while queued) finalises its stream without
    // the target's lock; its row lock orders the two instead.
    runEnded: async (runId) => {
      const [run] = await sql<Array<{ ended: boolean }>>`
        SELECT finish_seq IS NOT NULL AS ended FROM runs WHERE id = ${runId} FOR SHARE`;
      return run?.ended ?? false;
    },
    runAnswered: async (runId) => {
      const [answered] = await sql`SELECT 1 FROM outbox WHERE run_id = ${runId} AND media IS NULL LIMIT 1`;
      return answered !== undefined;
    },
    targetHeld: async (row, nowMs) => {
      const [{ held }] = (await sql`
        SELECT ${targetHeld(sql, nowMs)} AS held FROM outbox WHERE id = ${row.id}`) as [{ held: boolean }];
      return held;
    },
    heads: (channels, nowMs, limit) => sql<OutboxRow[]>`
      SELECT * FROM (${heads(sql, channels, nowMs)}) o WHERE o.next_attempt_at_ms <= ${nowMs}
      ORDER BY o.next_attempt_at_ms, o.created_at_ms, o.id LIMIT ${limit}`,
    wakeAt: async (channels, nowMs) => {
      const [row] = await sql<Array<{ at: string | null }>>`
        SELECT LEAST(
          (SELECT MIN(o.next_attempt_at_ms) FROM (${heads(sql, channels, nowMs)}) o),
          (SELECT MIN(next_attempt_at_ms) FROM outbox WHERE state = 'ambiguous'
            AND next_attempt_at_ms > ${nowMs} AND next_attempt_at_ms < ${HOLD_FOREVER_MS}
            AND channel IN ${sql([...channels])})) AS at`;
      return row?.at == null ? null : Number(row.at);
    },
    list: (filter) => {
      const state = filter.state ?? null;
      const conversationId = filter.conversationId ?? null;
      const channel = filter.destination?.channel ?? null;
      const target = filter.destination?.target ?? null;
      return sql<OutboxRow[]>`
        SELECT * FROM outbox
        WHERE (${state}::text IS NULL OR state = ${state}) AND (${conversationId}::text IS NULL OR conversation_id = ${conversationId})
          AND (${channel}::text IS NULL OR (channel = ${channel} AND target = ${target}))
        ORDER BY created_at_ms DESC, ordinal DESC, id DESC LIMIT ${filter.limit ?? 100}`;
    },
    counts: async (conversationId) => {
      const [row] = await sql<Array<{ waiting: string; ambiguous: string }>>`
        SELECT count(*) FILTER (WHERE state IN ('pending', 'sending')) AS waiting,
               count(*) FILTER (WHERE state = 'ambiguous') AS ambiguous
        FROM outbox WHERE conversation_id = ${conversationId}`;
      return { waiting: Number(row!.waiting), ambiguous: Number(row!.ambiguous) };
    },
  };
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
export class PostgresOutboxRepository extends EngineOutboxRepository {
  constructor(private readonly sql: SQL) {
    super();
  }

  protected async transact<R>(procedure: OutboxWrite<R>): Promise<R> {
    return (await this.sql.begin("isolation level read committed", (tx) =>
      runAsync(procedure, postgresOutboxSteps(tx)),
    )) as R;
  }

  /** Each statement on its own: the procedure's one write holds by its own conditions. */
  protected apply<R>(procedure: OutboxWrite<R>): Promise<R> {
    return runAsync(procedure, postgresOutboxSteps(this.sql));
  }

  protected read<R>(procedure: OutboxWrite<R>): Promise<R> {
    return runAsync(procedure, postgresOutboxSteps(this.sql));
  }
}
