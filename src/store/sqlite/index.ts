import type { Database } from "bun:sqlite";
import { type Migration, openDatabase } from "./database.ts";
import { SqliteRuntimeStore } from "./runtime-store.ts";
import { RUNTIME_SCHEMA_SQL } from "./schema.ts";

/** Every schema step switchboard's SQLite database has taken, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [{ version: 1, name: "runtime", sql: RUNTIME_SCHEMA_SQL }];

export interface SqliteStores {
  db: Database;
  runtime: SqliteRuntimeStore;
  close(): void;
}

export function openSqliteStores(filename: string, options: { busyTimeoutMs?: number } = {}): SqliteStores {
  const db = openDatabase({ filename, migrations: MIGRATIONS, ...options });
  return {
    db,
    runtime: new SqliteRuntimeStore(db),
    close: () => db.close(),
  };
}
