import type { StoreBackend } from "./backend.ts";

/**
 * Where everything durable lives: a SQLite file (the embedded default) or a PostgreSQL server.
 * `standby` (PostgreSQL only): while another gateway is active on the database, wait and take over
 * when it stops, instead of refusing to start. `cacheBytes` (SQLite only): the page cache (default in
 * src/store/sqlite/database.ts).
 */
export type DatabaseConfig =
  | { engine: "sqlite"; path: string; blobDir?: string; cacheBytes?: number }
  | { engine: "postgres"; url: string; standby: boolean };

/**
 * Opens (creating and migrating as needed) the configured database. The PostgreSQL code loads
 * only when it is configured.
 */
export async function openStoreBackend(database: DatabaseConfig): Promise<StoreBackend> {
  if (database.engine === "sqlite") {
    const { openSqliteBackend } = await import("./sqlite/backend.ts");
    return openSqliteBackend(database.path, database.blobDir, undefined, database.cacheBytes);
  }
  const { openPostgresBackend } = await import("./postgres/backend.ts");
  return openPostgresBackend(database.url, { migrate: true });
}
