import { join } from "node:path";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runBudgetConformance } from "./budget-conformance.ts";

useTestServer();

runBudgetConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    runtime: stores.runtime,
    budgets: stores.budgets,
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

runBudgetConformance("postgres", async () => {
  const db = await createDatabase();
  try {
    const backend = await openPostgresBackend(db.url);
    return {
      runtime: backend.runtime,
      budgets: backend.budgets,
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
