import { join } from "node:path";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runSearchConformance } from "./search-conformance.ts";

useTestServer();

runSearchConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    store: stores.runtime,
    search: stores.search,
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

runSearchConformance("postgres", async () => {
  const db = await createDatabase();
  try {
    const backend = await openPostgresBackend(db.url);
    return {
      store: backend.runtime,
      search: backend.search,
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
