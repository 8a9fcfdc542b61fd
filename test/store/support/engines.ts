/**
 * Both store engines as one list, for the conformance suites that need a whole backend: each
 * `open()` makes a fresh, migrated database (a temporary SQLite file, or a new database on the
 * PostgreSQL test server) behind the StoreBackend interface the gateway uses.
 */
import { join } from "node:path";
import type { StoreBackend } from "../../../src/store/backend.ts";
import { openPostgresBackend } from "../../../src/store/postgres/backend.ts";
import { openSqliteBackend } from "../../../src/store/sqlite/backend.ts";
import { createDatabase } from "../../support/postgres.ts";
import { useTestServer } from "../../support/postgres-hooks.ts";
import { tempDir } from "../../support/runtime.ts";

export interface EngineHarness {
  backend: StoreBackend;
  /** Closes the backend and opens the same database again, as a restart does. */
  reopen(): Promise<StoreBackend>;
  /** Closes the backend and removes the database. */
  close(): Promise<void>;
}

export type OpenEngine = () => Promise<EngineHarness>;

async function openSqlite(): Promise<EngineHarness> {
  const dir = tempDir();
  const file = join(dir.path, "s.sqlite");
  const harness: EngineHarness = {
    backend: openSqliteBackend(file),
    async reopen() {
      await harness.backend.close();
      harness.backend = openSqliteBackend(file);
      return harness.backend;
    },
    async close() {
      await harness.backend.close();
      dir.cleanup();
    },
  };
  return harness;
}

async function openPostgres(): Promise<EngineHarness> {
  const db = await createDatabase({ migrated: true });
  try {
    const harness: EngineHarness = {
      backend: await openPostgresBackend(db.url),
      async reopen() {
        await harness.backend.close();
        harness.backend = await openPostgresBackend(db.url);
        return harness.backend;
      },
      async close() {
        await harness.backend.close();
        await db.drop();
      },
    };
    return harness;
  } catch (error) {
    await db.drop();
    throw error;
  }
}

export const ENGINES: ReadonlyArray<{ name: StoreBackend["engine"]; open: OpenEngine }> = [
  { name: "sqlite", open: openSqlite },
  { name: "postgres", open: openPostgres },
];

/**
 * Registers `suite` once per engine (and the PostgreSQL test server's hooks for the file): the
 * two-engine wiring of a conformance test file in one call.
 */
export function forEachEngine(suite: (name: StoreBackend["engine"], open: OpenEngine) => void): void {
  useTestServer();
  for (const engine of ENGINES) suite(engine.name, engine.open);
}
