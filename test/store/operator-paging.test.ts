import { join } from "node:path";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runOperatorPagingConformance } from "./operator-conformance.ts";

useTestServer();

runOperatorPagingConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    stores,
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

runOperatorPagingConformance("postgres", async () => {
  const db = await createDatabase();
  const backend = await openPostgresBackend(db.url);
  return {
    stores: backend,
    close: async () => {
      await backend.close();
      await db.drop();
    },
  };
});
