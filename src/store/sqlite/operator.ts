/**
 * Operator work on the SQLite file itself: database checks and backups, and opening an existing
 * database without creating or migrating it.
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { OUTBOX_TRANSITIONS } from "../../../outbox/transitions.ts";
import type { OutboxState } from "../../../outbox/types.ts";
import { SwitchboardError } from "../../errors.ts";
import { ACTIVE_STATES_SQL } from "../operator-sql.ts";
import { applyPragmas, schemaVersion } from "./database.ts";
import { MIGRATIONS, openSqliteStores, type SqliteStores } from "./index.ts";
import { planOnce } from "./plan-once.ts";

/** The schema version this build writes and reads. */
export const EXPECTED_SCHEMA_VERSION = MIGRATIONS.length;

const OUTBOX_STATES = Object.keys(OUTBOX_TRANSITIONS) as OutboxState[];

/**
 * Opens an existing database file for reading and operator changes, without creating it, its
 * folder or any table, and without migrating it. Throws `not_found` when the file is missing.
 */
export function openExistingDatabase(path: string, options: { busyTimeoutMs?: number } = {}): Database {
  if (!existsSync(path)) {
    throw new SwitchboardError("not_found", `No database at ${path}.`, { details: { path } });
  }
  const db = new Database(path, { create: false, readwrite: true, strict: true });
  planOnce(db);
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
      activeRuns: count("runs", `WHERE state IN ${ACTIVE_STATES_SQL}`),
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
