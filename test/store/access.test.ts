import { join } from "node:path";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runAccessConformance } from "./access-conformance.ts";

useTestServer();

runAccessConformance("sqlite", async () => {
  const dir = tempDir();
  const file = join(dir.path, "s.sqlite");
  let stores = openSqliteStores(file);
  return {
    store: stores.access,
    async reopen() {
      stores.close();
      stores = openSqliteStores(file);
      return stores.access;
    },
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

runAccessConformance("postgres", async () => {
  const db = await createDatabase();
  try {
    let backend = await openPostgresBackend(db.url);
    return {
      store: backend.access,
      async reopen() {
        await backend.close();
        backend = await openPostgresBackend(db.url);
        return backend.access;
      },
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
