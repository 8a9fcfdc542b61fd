/**
 * The "web-session-ids" data migration on SQLite (see ../web-session-ids.ts): one IMMEDIATE
 * transaction that finds the session ids, rewrites every text column of every table, and records
 * that it ran. `secure_delete` is on meanwhile, so the old values are zeroed in the pages they
 * leave, and the WAL is truncated after, so no copy stays in the file's bytes either.
 */
import type { Database } from "bun:sqlite";
import {
  DISCOVERY,
  rewriterOf,
  rewrittenColumns,
  type SessionIdRewriter,
  UNTOUCHED_TABLES,
  WEB_SESSION_IDS_MIGRATION,
  type WebSessionMigration,
} from "../web-session-ids.ts";

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Runs the migration unless it ran before; null when it had. `userIdOf` may throw: then nothing
 * is changed and nothing recorded.
 */
export function migrateSqliteWebSessionIds(
  db: Database,
  userIdOf: (sessionId: string) => string,
  nowMs: number,
): WebSessionMigration | null {
  const ran = () =>
    db.query("SELECT 1 FROM switchboard_meta WHERE key = ?").get(WEB_SESSION_IDS_MIGRATION) !== null;
  if (ran()) return null;
  const secureDelete = (db.query("PRAGMA secure_delete").get() as { secure_delete: number }).secure_delete;
  db.exec("PRAGMA secure_delete = ON");
  let result: WebSessionMigration | null = null;
  try {
    db.transaction(() => {
      if (ran()) return;
      const found = DISCOVERY.map((source) => db.query(source.sql).all() as Array<{ v: unknown }>);
      const rewriter = rewriterOf(found, userIdOf);
      const changed = { rows: 0, tables: [] as string[] };
      if (rewriter.size > 0) {
        for (const table of rewritableTables(db)) {
          const rows = rewriteTable(db, table, rewriter);
          if (rows > 0) {
            changed.rows += rows;
            changed.tables.push(table.name);
          }
        }
      }
      result = { sessions: rewriter.size, ...changed };
      db.query("INSERT INTO switchboard_meta (key, value) VALUES (?, ?)").run(
        WEB_SESSION_IDS_MIGRATION,
        JSON.stringify({ atMs: nowMs, ...result }),
      );
    }).immediate();
  } finally {
    db.exec(`PRAGMA secure_delete = ${secureDelete ? "ON" : "OFF"}`);
  }
  // Frames of the old pages stay in the WAL until it is reset: truncate it (best effort: a
  // reader in another process may hold it, and the next checkpoint then overwrites them).
  if (result !== null && (result as WebSessionMigration).rows > 0) {
    try {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {}
  }
  return result;
}

interface Table {
  name: string;
  /** The columns that identify a row: `rowid`, or a WITHOUT ROWID table's primary key. */
  keys: string[];
  /** Columns that may hold text. */
  texts: string[];
}

/** Every table but SQLite's own, full-text index tables (kept by triggers) and UNTOUCHED_TABLES. */
function rewritableTables(db: Database): Table[] {
  const all = db
    .query("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all() as Array<{ name: string; sql: string | null }>;
  const virtual = all.filter((t) => /^CREATE VIRTUAL TABLE/i.test(t.sql ?? "")).map((t) => t.name);
  return all
    .filter((t) => !UNTOUCHED_TABLES.has(t.name))
    .filter((t) => !virtual.some((v) => t.name === v || t.name.startsWith(`${v}_`)))
    .map((t) => {
      const columns = db.query(`SELECT name, type, pk FROM pragma_table_info(?)`).all(t.name) as Array<{
        name: string;
        type: string;
        pk: number;
      }>;
      const withoutRowid = /WITHOUT\s+ROWID/i.test(t.sql ?? "");
      return {
        name: t.name,
        keys: withoutRowid
          ? columns
              .filter((c) => c.pk > 0)
              .sort((a, b) => a.pk - b.pk)
              .map((c) => c.name)
          : ["rowid"],
        texts: columns.filter((c) => c.type === "" || /CHAR|CLOB|TEXT|JSON/i.test(c.type)).map((c) => c.name),
      };
    })
    .filter((t) => t.texts.length > 0 && t.keys.length > 0);
}

/** Rewrites the rows of one table that hold a session id; returns how many changed. */
function rewriteTable(db: Database, table: Table, rewriter: SessionIdRewriter): number {
  const keyList = table.keys.map((k, i) => `${k === "rowid" ? "rowid" : quote(k)} AS k${i}`);
  const textList = table.texts.map((c, i) => `${quote(c)} AS c${i}`);
  const select = db.prepare(`SELECT ${[...keyList, ...textList].join(", ")} FROM ${quote(table.name)}`);
  const updates: Array<{ keys: unknown[]; values: Array<[number, string]> }> = [];
  for (const row of select.iterate() as Iterable<Record<string, unknown>>) {
    const values = rewrittenColumns(row, table.name, table.texts, rewriter);
    if (values.length > 0) updates.push({ keys: table.keys.map((_, i) => row[`k${i}`]), values });
  }
  const where = table.keys.map((k) => `${k === "rowid" ? "rowid" : quote(k)} = ?`).join(" AND ");
  for (const update of updates) {
    const set = update.values.map(([i]) => `${quote(table.texts[i]!)} = ?`).join(", ");
    db.prepare(`UPDATE ${quote(table.name)} SET ${set} WHERE ${where}`).run(
      ...(update.values.map(([, v]) => v) as string[]),
      ...(update.keys as string[]),
    );
  }
  return updates.length;
}
