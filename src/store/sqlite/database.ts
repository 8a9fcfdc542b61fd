import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { SwitchboardError } from "../../errors.ts";
import { planOnce } from "./plan-once.ts";

/** One forward-only step of the schema. Versions are contiguous from 1. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export interface OpenOptions {
  /** File path, or ":memory:". Parent folders are created. */
  filename: string;
  migrations: readonly Migration[];
  /** How long a writer waits for the lock, in milliseconds. Keep it under test timeouts. */
  busyTimeoutMs?: number;
  /** SQLite's page cache for this connection, in bytes. Default SQLITE_CACHE_BYTES_DEFAULT. */
  cacheBytes?: number;
}

/**
 * 16 MiB: admission (bench/admission.ts) is within the run-to-run spread of 64 MiB's, and every
 * MiB of it stays resident once the database outgrows it (docs/benchmarks.md, Load).
 */
export const SQLITE_CACHE_BYTES_DEFAULT = 16 * 1024 * 1024;

const META_TABLE = "switchboard_meta";

/**
 * Opens a switchboard database: WAL, foreign-key-free normalized tables, schema versioned in
 * switchboard's own meta table. Refuses a newer schema and a partial one (switchboard tables
 * without a version) with an error that says what to do.
 */
export function openDatabase(options: OpenOptions): Database {
  raiseStatementCache();
  if (options.filename !== ":memory:") mkdirSync(dirname(options.filename), { recursive: true });
  const db = new Database(options.filename, { create: true, strict: true });
  planOnce(db);
  applyPragmas(db, options.busyTimeoutMs ?? 3000, options.cacheBytes);
  try {
    migrate(db, options.filename, options.migrations);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * WAL with synchronous=NORMAL: a commit is durable against a process crash (what the promises are
 * about) and against power loss up to the last checkpoint. A larger autocheckpoint (about 40 MB
 * of WAL) keeps the fsync-heavy checkpoints rare on slow disks; a page cache larger than SQLite's
 * 2 MiB keeps the indexes every admission touches in memory, which doubled admission throughput.
 */
export function applyPragmas(
  db: Database,
  busyTimeoutMs: number,
  cacheBytes = SQLITE_CACHE_BYTES_DEFAULT,
): void {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA wal_autocheckpoint = 10000");
  // A negative cache_size is in KiB.
  db.exec(`PRAGMA cache_size = -${Math.max(1, Math.round(cacheBytes / 1024))}`);
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
}

/**
 * bun:sqlite keeps only 20 prepared statements per connection by default; switchboard's store,
 * outbox and schedules use far more, and re-preparing on every miss cost ~10% of the CPU under
 * load. 512 covers them all.
 */
function raiseStatementCache(): void {
  const statics = Database as unknown as { MAX_QUERY_CACHE_SIZE: number };
  if (statics.MAX_QUERY_CACHE_SIZE < 512) statics.MAX_QUERY_CACHE_SIZE = 512;
}

export function schemaVersion(db: Database): number {
  const meta = db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?").get(META_TABLE);
  if (!meta) return 0;
  const row = db.query(`SELECT value FROM ${META_TABLE} WHERE key = 'schema_version'`).get() as {
    value: string;
  } | null;
  return row ? Number(row.value) : 0;
}

function migrate(db: Database, filename: string, migrations: readonly Migration[]): void {
  const latest = migrations.length;
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration list is not contiguous at ${m.name}`);
  });
  db.transaction(() => {
    const current = schemaVersion(db);
    if (current === 0) {
      const tables = db
        .query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .get() as { n: number };
      if (tables.n > 0) {
        throw new SwitchboardError(
          "schema_unsupported",
          `Database ${filename} has tables but no switchboard schema version: it is a partial or foreign database. ` +
            "Point SWITCHBOARD_DB at a new file, or restore it from a backup.",
        );
      }
      db.exec(`CREATE TABLE ${META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    }
    if (current > latest) {
      throw new SwitchboardError(
        "schema_unsupported",
        `Database ${filename} has schema version ${current}, newer than this switchboard (${latest}). ` +
          "Upgrade switchboard, or restore a backup made before the upgrade.",
      );
    }
    for (const m of migrations.slice(current)) {
      db.exec(m.sql);
      db.query(
        `INSERT INTO ${META_TABLE} (key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      ).run(String(m.version));
    }
  }).immediate();
}

/** `?, ?, …` for `count` bound values in an `IN (…)` or `VALUES (…)` list. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ");
}
