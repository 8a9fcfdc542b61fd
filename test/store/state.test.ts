import { join } from "node:path";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import type { PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runStateConformance } from "./state-conformance.ts";

useTestServer();

runStateConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    store: stores.runtime,
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

runStateConformance("postgres", async () => {
  const db = await createDatabase();
  try {
    const backend = await openPostgresBackend(db.url);
    return {
      store: backend.runtime as PostgresRuntimeStore,
      close: async () => {
        await backend.close();
        await db.drop();
      },
    };
  } catch (error) {
    await db.drop();
    throw error;
  }
});
