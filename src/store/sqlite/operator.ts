/**
 * The SQL behind operator views (CLI and HTTP API): lists across conversations, database checks
 * and backups, and opening an existing database without creating or migrating it.
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { OUTBOX_TRANSITIONS } from "../../../outbox/transitions.ts";
import type { OutboxState } from "../../../outbox/types.ts";
import { LIVE_SCHEDULE_STATES, SCHEDULE_STATES, type ScheduleRepository } from "../../../schedules/types.ts";
import { SwitchboardError } from "../../errors.ts";
import type { OperatorQueries } from "../../gateway/operator/queries.ts";
import type { ConversationSummary } from "../../gateway/operator-types.ts";
import { ACTIVE_RUN_STATES } from "../../runtime/types.ts";
import { type RunRow, toRun } from "../rows.ts";
import { applyPragmas, schemaVersion } from "./database.ts";
import { MIGRATIONS, openSqliteStores, type SqliteStores } from "./index.ts";

/** The schema version this build writes and reads. */
export const EXPECTED_SCHEMA_VERSION = MIGRATIONS.length;

const ACTIVE = `(${ACTIVE_RUN_STATES.map((s) => `'${s}'`).join(", ")})`;
const OUTBOX_STATES = Object.keys(OUTBOX_TRANSITIONS) as OutboxState[];

interface ConversationRow {
  id: string;
  version: number;
  created_at_ms: number;
  key: string | null;
  last_activity_at_ms: number | null;
  runs: number;
  active_runs: number;
}

/**
 * Summaries of the conversations `recent` selects. The conversation's last event is its last
 * activity (every admission, step and terminal commit appends one). Runs are counted in one pass
 * over the selected conversations only.
 */
function conversationSummarySql(recent: string): string {
  return `
    WITH recent AS (
      SELECT c.id, c.version, c.created_at_ms,
        (SELECT e.at_ms FROM events e WHERE e.conversation_id = c.id AND e.seq = c.last_seq) AS last_activity_at_ms
      FROM conversations c ${recent}
    ),
    run_counts AS (
      SELECT conversation_id, count(*) AS runs, COALESCE(sum(state IN ${ACTIVE}), 0) AS active_runs
      FROM runs WHERE conversation_id IN (SELECT id FROM recent) GROUP BY conversation_id
    ),
    keys AS (
      SELECT conversation_id, max(key) AS key FROM conversation_keys
      WHERE conversation_id IN (SELECT id FROM recent) GROUP BY conversation_id
    )
    SELECT recent.*, keys.key, COALESCE(run_counts.runs, 0) AS runs, COALESCE(run_counts.active_runs, 0) AS active_runs
    FROM recent
    LEFT JOIN run_counts ON run_counts.conversation_id = recent.id
    LEFT JOIN keys ON keys.conversation_id = recent.id
    ORDER BY COALESCE(recent.last_activity_at_ms, recent.created_at_ms) DESC, recent.id DESC`;
}

function toSummary(row: ConversationRow): ConversationSummary {
  return {
    id: row.id,
    key: row.key,
    version: row.version,
    createdAtMs: row.created_at_ms,
    lastActivityAtMs: row.last_activity_at_ms,
    runs: row.runs,
    activeRuns: row.active_runs,
  };
}

/** Operator queries over switchboard's SQLite database and its schedule repository. */
export function createSqliteOperatorQueries(stores: {
  db: Database;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { db } = stores;
  const read = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(db.transaction(work).deferred());
    } catch (error) {
      return Promise.reject(error);
    }
  };

  return {
    listRuns: (filter) =>
      read(() =>
        (
          db
            .query(
              `SELECT * FROM runs WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR conversation_id = ?2)
               ORDER BY queue_seq DESC LIMIT ?3`,
            )
            .all(filter.state ?? null, filter.conversationId ?? null, filter.limit) as RunRow[]
        ).map(toRun),
      ),

    listConversations: (limit) =>
      read(() =>
        (
          db
            .query(
              conversationSummarySql(
                "ORDER BY COALESCE(last_activity_at_ms, c.created_at_ms) DESC, c.id DESC LIMIT ?1",
              ),
            )
            .all(limit) as ConversationRow[]
        ).map(toSummary),
      ),

    conversationSummary: (conversationId) =>
      read(() => {
        const row = db.query(conversationSummarySql("WHERE c.id = ?1")).get(conversationId);
        return row ? toSummary(row as ConversationRow) : null;
      }),

    async listSchedules(filter) {
      const states = filter.includeEnded ? SCHEDULE_STATES : LIVE_SCHEDULE_STATES;
      const conversationIds =
        filter.conversationId !== undefined
          ? [filter.conversationId]
          : await read(() =>
              (
                db
                  .query(
                    `SELECT DISTINCT conversation_id FROM schedules
                     WHERE state IN (${states.map(() => "?").join(", ")}) ORDER BY conversation_id`,
                  )
                  .all(...states) as Array<{ conversation_id: string }>
              ).map((row) => row.conversation_id),
            );
      // The repository owns the row → Schedule mapping (and its validation); reuse it per conversation.
      const lists = await Promise.all(
        conversationIds.map((id) => stores.schedules.listByConversation(id, states)),
      );
      return lists.flat().sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
    },
  };
}

/**
 * Opens an existing database file for reading and operator changes, without creating it, its
 * folder or any table, and without migrating it. Throws `not_found` when the file is missing.
 */
export function openExistingDatabase(path: string, options: { busyTimeoutMs?: number } = {}): Database {
  if (!existsSync(path)) {
    throw new SwitchboardError("not_found", `No database at ${path}.`, { details: { path } });
  }
  const db = new Database(path, { create: false, readwrite: true, strict: true });
  applyPragmas(db, options.busyTimeoutMs ?? 5000);
  return db;
}

/**
 * The repositories over an existing database whose schema is exactly the one this build expects.
 * Throws `not_found` when the file is missing and `schema_unsupported` (saying whether to migrate
 * or to upgrade) when its version differs.
 */
export function openExistingStores(path: string, options: { busyTimeoutMs?: number } = {}): SqliteStores {
  const db = openExistingDatabase(path, options);
  let version: number;
  try {
    version = schemaVersion(db);
  } finally {
    db.close();
  }
  if (version !== EXPECTED_SCHEMA_VERSION) {
    throw new SwitchboardError(
      "schema_unsupported",
      version < EXPECTED_SCHEMA_VERSION
        ? `Database ${path} has schema version ${version}; this switchboard expects ${EXPECTED_SCHEMA_VERSION}. ` +
            "Back it up (switchboard db backup PATH), then run `switchboard db migrate`."
        : `Database ${path} has schema version ${version}, newer than this switchboard (${EXPECTED_SCHEMA_VERSION}). ` +
            "Upgrade switchboard, or restore a backup made before the upgrade.",
      { details: { path, schemaVersion: version, expectedVersion: EXPECTED_SCHEMA_VERSION } },
    );
  }
  // The schema is current, so this opens the same file without migrating or creating anything.
  return openSqliteStores(path, { busyTimeoutMs: options.busyTimeoutMs ?? 5000 });
}

export interface MigrationReport {
  path: string;
  /** 0 for a database this call created. */
  fromVersion: number;
  toVersion: number;
}

/** Creates the database when missing and applies every pending migration. */
export function migrateDatabaseFile(path: string): MigrationReport {
  let fromVersion = 0;
  if (existsSync(path)) {
    const db = openExistingDatabase(path);
    try {
      fromVersion = schemaVersion(db);
    } finally {
      db.close();
    }
  }
  const stores = openSqliteStores(path);
  try {
    return { path, fromVersion, toVersion: schemaVersion(stores.db) };
  } finally {
    stores.close();
  }
}

export interface DatabaseCheck {
  /** Integrity is ok and the schema is the expected version. */
  ok: boolean;
  schemaVersion: number;
  expectedVersion: number;
  /** "ok", or the problems SQLite reported (at most 100). */
  integrity: "ok" | string[];
  counts: {
    conversations: number;
    runs: number;
    activeRuns: number;
    /** Every outbox state, zero when none. */
    outbox: Record<OutboxState, number>;
    schedules: number;
  };
}

/**
 * Checks integrity (`PRAGMA integrity_check`, or the faster `quick_check` that skips index
 * contents) and counts the main tables. Tables a behind-schema database lacks count as 0.
 */
export function checkDatabase(db: Database, options: { quick?: boolean } = {}): DatabaseCheck {
  const pragma = options.quick ? "quick_check" : "integrity_check";
  const findings = (db.query(`PRAGMA ${pragma}`).values() as unknown[][]).map((row) => String(row[0]));
  const integrity = findings.length === 1 && findings[0] === "ok" ? "ok" : findings;
  const hasTable = (name: string) =>
    db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== null;
  const count = (table: string, where = "") =>
    hasTable(table) ? (db.query(`SELECT count(*) AS n FROM ${table} ${where}`).get() as { n: number }).n : 0;

  const outbox = Object.fromEntries(OUTBOX_STATES.map((state) => [state, 0])) as Record<OutboxState, number>;
  if (hasTable("outbox")) {
    const rows = db.query("SELECT state, count(*) AS n FROM outbox GROUP BY state").all() as Array<{
      state: OutboxState;
      n: number;
    }>;
    for (const row of rows) outbox[row.state] = row.n;
  }
  const version = schemaVersion(db);
  return {
    ok: integrity === "ok" && version === EXPECTED_SCHEMA_VERSION,
    schemaVersion: version,
    expectedVersion: EXPECTED_SCHEMA_VERSION,
    integrity,
    counts: {
      conversations: count("conversations"),
      runs: count("runs"),
      activeRuns: count("runs", `WHERE state IN ${ACTIVE}`),
      outbox,
      schedules: count("schedules"),
    },
  };
}

/**
 * Writes a consistent, compacted copy of the database to `path` with `VACUUM INTO` (safe while
 * the gateway writes: it reads one snapshot). Creates missing parent folders. Refuses an existing
 * file with `input_invalid`, so a backup never overwrites another.
 */
export function backupDatabase(db: Database, path: string): { path: string; bytes: number } {
  const target = resolve(path);
  if (existsSync(target)) {
    throw new SwitchboardError(
      "input_invalid",
      `${target} already exists; a backup never overwrites a file. Choose a new path or move the old file away.`,
      { details: { path: target } },
    );
  }
  mkdirSync(dirname(target), { recursive: true });
  db.query("VACUUM INTO ?").run(target);
  return { path: target, bytes: statSync(target).size };
}
