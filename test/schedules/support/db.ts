import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../../src/store/sqlite/database.ts";
import { MIGRATIONS } from "../../../src/store/sqlite/index.ts";

function connect(file: string): Database {
  const db = new Database(file, { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA busy_timeout = 3000");
  db.exec("PRAGMA synchronous = NORMAL");
  return db;
}

/** A switchboard database on a temp file, for the schedule repository; `connect()` opens further connections to the same file. */
export function openTestDatabase() {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-schedules-"));
  const file = join(dir, "schedules.db");
  // Migrated as the gateway's database is (the schedule tables join conversation keys).
  const db = openDatabase({ filename: file, migrations: MIGRATIONS });
  const connections = [db];
  return {
    db,
    file,
    connect() {
      const extra = connect(file);
      connections.push(extra);
      return extra;
    },
    close() {
      for (const c of connections) c.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Rows this connection wrote since it opened. */
export function totalChanges(db: Database): number {
  return (db.query("SELECT total_changes() AS n").get() as { n: number }).n;
}
