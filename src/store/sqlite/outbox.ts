import type { Database, SQLQueryBindings } from "bun:sqlite";
import { AWAITING_STATUS_PREFIX } from "../../../outbox/platform-status.ts";
import { assertTransition } from "../../../outbox/transitions.ts";
import type { OutboxCounts } from "../../../outbox/types.ts";
import {
  HOLD_FOREVER_MS,
  historyJson,
  holdsChatSql,
  OPEN_STATES_SQL,
  type OutboxRow,
} from "../outbox-records.ts";
import {
  EngineOutboxRepository,
  type OutboxSteps,
  type OutboxWrite,
  type RecordChange,
} from "../outbox-writes.ts";
import { runSync } from "../steps.ts";
import { outboxSchemaSql, SQLITE_DIALECT } from "../tables.sql.ts";
import { placeholders } from "./database.ts";

/** Version 1 of the meaning of outbox rows. Bump it, and document the change here, when that meaning changes. */
export const OUTBOX_SCHEMA_VERSION = 1;

/** Migration 2: the outbox table (../tables.sql.ts). */
export const OUTBOX_SCHEMA_SQL = outboxSchemaSql(SQLITE_DIALECT);

/** Part of migration 9: a message record's buttons, or the earlier record it edits (JSON). */
export const OUTBOX_PRESENTATION_SQL = "ALTER TABLE outbox ADD COLUMN presentation TEXT;";

/** Migration 16 (outbox-media): the file a message record delivers (JSON OutboxMedia). */
export const OUTBOX_MEDIA_SQL = "ALTER TABLE outbox ADD COLUMN media TEXT;";

/**
 * Migration 7: an ambiguous record's `next_attempt_at_ms` says until when it holds back its chat.
 * Records already ambiguous were left to an operator, so they keep holding until one decides.
 */
export const AMBIGUOUS_HOLDS_SQL = `UPDATE outbox SET next_attempt_at_ms = ${HOLD_FOREVER_MS} WHERE state = 'ambiguous';`;

/** `history` with `count` entries appended, one parameter each. */
function appendHistorySql(count: number): string {
  let sql = "history";
  for (let i = 0; i < count; i++) sql = `json_insert(${sql}, '$[#]', json(?))`;
  return sql;
}

/** A change's UPDATE statement and its parameters (see outbox-writes.ts, RecordChange). */
function changeSql(change: RecordChange): { sql: string; params: SQLQueryBindings[] } {
  const { to, from, where = {}, entries } = change;
  if (to !== undefined) for (const state of from) assertTransition(change.id, state, to);
  const set = Object.entries(change.set ?? {});
  const conditions: string[] = [];
  const whereParams: SQLQueryBindings[] = [];
  if (where.kind !== undefined) {
    conditions.push(" AND kind = ?");
    whereParams.push(where.kind);
  }
  if (where.chunksDelivered !== undefined) {
    conditions.push(" AND chunks_delivered = ?");
    whereParams.push(where.chunksDelivered);
  }
  if (where.streamShows !== undefined) {
    conditions.push(" AND (kind = 'message' OR (final = 1 AND markdown = ?))");
    whereParams.push(where.streamShows);
  }
  // `where.claim` needs nothing more: this connection is the database's one writer, and the row the
  // claim read is the one it changes, in the same transaction.
  const sql = `UPDATE outbox SET updated_at_ms = ?${to === undefined ? "" : ", state = ?"}${
    entries.length > 0 ? `, history = ${appendHistorySql(entries.length)}` : ""
  }${set.map(([column]) => `, ${column} = ?`).join("")}
    WHERE id = ? AND state IN (${placeholders(from.length)})${conditions.join("")}`;
  const params: SQLQueryBindings[] = [
    change.nowMs,
    ...(to === undefined ? [] : [to]),
    ...entries.map(historyJson),
    ...set.map(([, value]) => value ?? null),
    change.id,
    ...from,
    ...whereParams,
  ];
  return { sql, params };
}

/**
 * The outbox's steps (see outbox-writes.ts) on a SQLite connection, inside its write transaction.
 * The runtime store's terminal commit runs the outbox's procedures (`commitAnswer`,
 * `insertRecords`, `finalizeStream`) on them inside its own.
 */
export function sqliteOutboxSteps(db: Database): OutboxSteps {
  const row = (idOrKey: string) =>
    db.query("SELECT * FROM outbox WHERE id = ? OR key = ?").get(idOrKey, idOrKey) as OutboxRow | null;
  return {
    row,
    lockRow: row,
    lockTargets: () => {},
    insertRecord: (record, nowMs) => {
      if (db.query("SELECT 1 FROM outbox WHERE key = ?").get(record.key)) return false;
      const { next } = db
        .query(
          "SELECT COALESCE(MAX(ordinal), 0) + 1 AS next FROM outbox WHERE channel = ? AND account = ? AND target = ?",
        )
        .get(record.channel, record.account, record.target) as { next: number };
      db.query(
        `INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, reply_to, ordinal, kind,
           markdown, final, state, attempts, next_attempt_at_ms, history, presentation, media, created_at_ms, updated_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?)`,
      ).run(
        record.id,
        record.key,
        record.runId,
        record.conversationId,
        record.channel,
        record.account,
        record.target,
        record.replyTo,
        next,
        record.kind,
        record.markdown,
        record.final ? 1 : 0,
        nowMs,
        record.history,
        record.presentation,
        record.media,
        nowMs,
        nowMs,
      );
      return true;
    },
    finalizeStream: (key, markdown, entry, nowMs) =>
      db
        .query(
          `UPDATE outbox SET markdown = ?, final = 1, updated_at_ms = ?, history = json_insert(history, '$[#]', json(?))
           WHERE key = ? AND kind = 'stream' AND final = 0`,
        )
        .run(markdown, nowMs, historyJson(entry), key).changes === 1,
    hasStream: (key) => db.query("SELECT 1 FROM outbox WHERE key = ? AND kind = 'stream'").get(key) !== null,
    change: (change) => {
      const { sql, params } = changeSql(change);
      return db.query(sql).run(...params).changes === 1;
    },
    changed: (change) => {
      const { sql, params } = changeSql(change);
      return db.query(`${sql} RETURNING *`).get(...params) as OutboxRow | null;
    },
    sendingRows: () =>
      db.query("SELECT * FROM outbox WHERE state = 'sending' ORDER BY ordinal").all() as OutboxRow[],
    statusWaitsOver: (nowMs) =>
      (
        db
          .query(
            `SELECT id FROM outbox WHERE state = 'sending' AND kind = 'message'
               AND substr(last_error, 1, ?) = ? AND next_attempt_at_ms <= ? ORDER BY ordinal`,
          )
          .all(AWAITING_STATUS_PREFIX.length, AWAITING_STATUS_PREFIX, nowMs) as Array<{ id: string }>
      ).map(({ id }) => id),
    runEnded: (runId) =>
      db.query("SELECT 1 FROM runs WHERE id = ? AND finish_seq IS NOT NULL").get(runId) !== null,
    runAnswered: (runId) =>
      db.query("SELECT 1 FROM outbox WHERE run_id = ? AND media IS NULL LIMIT 1").get(runId) !== null,
    // An earlier record that holds the chat; a later one is never being sent while this one waits
    // (this connection is the only writer, and its worker sends one record of a target at a time).
    targetHeld: (head, nowMs) =>
      db
        .query(
          `SELECT 1 FROM outbox WHERE channel = ? AND account = ? AND target = ? AND ordinal < ?
           AND ${holdsChatSql("", "?")} LIMIT 1`,
        )
        .get(head.channel, head.account, head.target, head.ordinal, nowMs) !== null,
    heads: (channels, nowMs, limit) =>
      db
        .query(
          `${headsSql(channels.length)} AND o.next_attempt_at_ms <= ?
           ORDER BY o.next_attempt_at_ms, o.created_at_ms LIMIT ?`,
        )
        .all(...channels, nowMs, nowMs, limit) as OutboxRow[],
    wakeAt: (channels, nowMs) =>
      (
        db
          .query(
            `SELECT MIN(at) AS at FROM (
               SELECT MIN(o.next_attempt_at_ms) AS at FROM (${headsSql(channels.length)}) AS o
               UNION ALL
               SELECT MIN(next_attempt_at_ms) FROM outbox WHERE ${AMBIGUOUS_HOLD_ENDS_SQL}
                 AND channel IN (${placeholders(channels.length)}))`,
          )
          .get(...channels, nowMs, nowMs, ...channels) as { at: number | null }
      ).at,
    list: (filter) =>
      db
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
        ) as OutboxRow[],
    counts: (conversationId) => {
      const row = db
        .query(
          `SELECT COALESCE(SUM(state IN ('pending', 'sending')), 0) AS waiting,
                  COALESCE(SUM(state = 'ambiguous'), 0) AS ambiguous
           FROM outbox WHERE conversation_id = ?`,
        )
        .get(conversationId) as OutboxCounts;
      return { waiting: row.waiting, ambiguous: row.ambiguous };
    },
  };
}

/** The outbox over one SQLite database (WAL, busy_timeout set by whoever opened it). */
export class SqliteOutboxRepository extends EngineOutboxRepository {
  private readonly steps: OutboxSteps;

  constructor(private readonly db: Database) {
    super();
    this.steps = sqliteOutboxSteps(db);
  }

  protected transact<R>(procedure: OutboxWrite<R>): Promise<R> {
    try {
      return Promise.resolve(this.db.transaction(() => runSync(procedure, this.steps)).immediate());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  protected apply<R>(procedure: OutboxWrite<R>): Promise<R> {
    return this.transact(procedure);
  }

  protected read<R>(procedure: OutboxWrite<R>): Promise<R> {
    try {
      return Promise.resolve(runSync(procedure, this.steps));
    } catch (error) {
      return Promise.reject(error);
    }
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
