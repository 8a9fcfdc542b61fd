/**
 * A database from before one migration, for the tests of that migration: written on by the code
 * of before the upgrade, then migrated to the latest schema and checked. The same two steps for
 * SQLite and PostgreSQL.
 */

import type { Database } from "bun:sqlite";
import { join } from "node:path";
import { SQL } from "bun";
import { migrate, MIGRATIONS as PG_MIGRATIONS } from "../../../src/store/postgres/schema.ts";
import { openDatabase } from "../../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores, type SqliteStores } from "../../../src/store/sqlite/index.ts";
import { createDatabase } from "../../support/postgres.ts";
import { tempDir } from "../../support/runtime.ts";

/** The migrations that come before the one named `name`. */
function migrationsBefore<M extends { name: string }>(migrations: readonly M[], name: string): M[] {
  const index = migrations.findIndex((m) => m.name === name);
  if (index < 0) throw new Error(`no migration named "${name}": name one of the schema's MIGRATIONS`);
  return migrations.slice(0, index);
}

/**
 * A SQLite file (in a temp dir named after `prefix`) migrated up to, not including, `migration`:
 * `before` writes on it; the file, opened again as the gateway opens it (so migrated to the
 * latest), goes to `after` with what `before` returned.
 */
export async function acrossSqliteUpgrade<T>(
  prefix: string,
  migration: string,
  before: (old: Database) => Promise<T>,
  after: (stores: SqliteStores, state: T) => Promise<void>,
): Promise<void> {
  const dir = tempDir(prefix);
  try {
    const file = join(dir.path, "upgrade.sqlite");
    const old = openDatabase({ filename: file, migrations: migrationsBefore(MIGRATIONS, migration) });
    let state: T;
    try {
      state = await before(old);
    } finally {
      old.close();
    }
    const stores = openSqliteStores(file);
    try {
      await after(stores, state);
    } finally {
      stores.close();
    }
  } finally {
    dir.cleanup();
  }
}

/**
 * A new database on the PostgreSQL test server migrated up to, not including, `migration`:
 * `before` writes on it; then it is migrated to the latest and `after` gets what `before`
 * returned. The database is dropped after.
 */
export async function acrossPostgresUpgrade<T>(
  migration: string,
  before: (sql: SQL) => Promise<T>,
  after: (sql: SQL, state: T) => Promise<void>,
): Promise<void> {
  const db = await createDatabase();
  const sql = new SQL(db.url, { adapter: "postgres", max: 2 });
  try {
    await migrate(sql, migrationsBefore(PG_MIGRATIONS, migration));
    const state = await before(sql);
    await migrate(sql);
    await after(sql, state);
  } finally {
    await sql.close();
    await db.drop();
  }
}
