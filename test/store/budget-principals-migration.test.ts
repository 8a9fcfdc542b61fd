/**
 * The migration that gives a named account's users principals of their own (SQLite's
 * "budget-account-principals", PostgreSQL's too), on a database from before it: usage recorded
 * before counts for `<channel>:<user>` (the `default` account) as it did, a run in flight across
 * the upgrade too, and a run through a named account counts for `<channel>:<account>:<user>`.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import type { BudgetStore } from "../../src/budgets/store.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { Usage } from "../../src/runtime/types.ts";
import { createPostgresBudgetStore } from "../../src/store/postgres/budgets.ts";
import { PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { migrate, MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/schema.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { SqliteRuntimeStore } from "../../src/store/sqlite/runtime-store.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { admitRequest } from "./conformance.ts";

useTestServer();

const T0 = 1_800_000_000_000;
const MIGRATION = "budget-account-principals";
const usage = (tokens: number): Usage => ({ inputTokens: tokens, outputTokens: 0 });

/** Admits a run of user 42 (through `accountName` when given) and acquires it. */
async function admit(store: OperatorRuntimeStore, key: string, accountName?: string) {
  const admitted = await store.admit(
    admitRequest(`c-${key}`, key, {
      context: {
        channel: "telegram",
        surface: "dm",
        principal: { id: "42" },
        ...(accountName === undefined ? {} : { accountName }),
      },
      nowMs: T0,
    }),
  );
  const acquired = await store.acquireRun({ runId: admitted.runId, owner: "w", nowMs: T0, leaseMs: 60_000 });
  return acquired!.fence;
}

async function step(store: OperatorRuntimeStore, fence: Awaited<ReturnType<typeof admit>>, tokens: number) {
  await store.checkpoint({
    fence,
    assistantParts: [{ type: "text", text: "step" }],
    step: {
      step: 0,
      model: "m",
      finishReason: "stop",
      usage: usage(tokens),
      startedAtMs: T0,
      finishedAtMs: T0,
    },
    joinedInputIds: [],
    nowMs: T0,
  });
}

/** Before the upgrade: one run that recorded usage, one still in flight. */
async function before(store: OperatorRuntimeStore) {
  await step(store, await admit(store, "old"), 10);
  return admit(store, "in-flight");
}

async function after(
  store: OperatorRuntimeStore,
  budgets: BudgetStore,
  inFlight: Awaited<ReturnType<typeof before>>,
) {
  await step(store, inFlight, 5);
  await step(store, await admit(store, "support", "support"), 100);
  const of = async (principal: string) => (await budgets.usageSince({ kind: "user", principal }, T0)).tokens;
  expect(await of("telegram:42")).toBe(15);
  expect(await of("telegram:support:42")).toBe(100);
}

test("SQLite: usage from before the upgrade stays the default account's; a named account's is its own", async () => {
  const dir = tempDir("switchboard-budget-principals-");
  try {
    const file = join(dir.path, "upgrade.sqlite");
    const old = openDatabase({
      filename: file,
      migrations: MIGRATIONS.slice(
        0,
        MIGRATIONS.findIndex((m) => m.name === MIGRATION),
      ),
    });
    const inFlight = await before(new SqliteRuntimeStore(old));
    old.close();
    const stores = openSqliteStores(file);
    try {
      await after(stores.runtime, stores.budgets, inFlight);
    } finally {
      stores.close();
    }
  } finally {
    dir.cleanup();
  }
}, 60_000);

test("PostgreSQL: usage from before the upgrade stays the default account's; a named account's is its own", async () => {
  const db = await createDatabase();
  const sql = new SQL(db.url, { adapter: "postgres", max: 2 });
  try {
    await migrate(
      sql,
      PG_MIGRATIONS.slice(
        0,
        PG_MIGRATIONS.findIndex((m) => m.name === MIGRATION),
      ),
    );
    const store = new PostgresRuntimeStore(sql);
    const inFlight = await before(store);
    await migrate(sql);
    await after(store, createPostgresBudgetStore(sql), inFlight);
  } finally {
    await sql.close();
    await db.drop();
  }
}, 60_000);
