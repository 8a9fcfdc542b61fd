import type { DatabaseConfig } from "../gateway/config.ts";
import type { StoreBackend } from "./backend.ts";

/**
 * Opens (creating and migrating as needed) the configured database. The PostgreSQL code loads
 * only when it is configured.
 */
export async function openStoreBackend(database: DatabaseConfig): Promise<StoreBackend> {
  if (database.engine === "sqlite") {
    const { openSqliteBackend } = await import("./sqlite/backend.ts");
    return openSqliteBackend(database.path);
  }
  const { openPostgresBackend } = await import("./postgres/backend.ts");
  return openPostgresBackend(database.url, { migrate: true });
}
