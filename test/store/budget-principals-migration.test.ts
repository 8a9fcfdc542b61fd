/**
 * The migration that gives a named account's users principals of their own (SQLite's
 * "budget-account-principals", PostgreSQL's too), on a database from before it: usage recorded
 * before counts for `<channel>:<user>` (the `default` account) as it did, a run in flight across
 * the upgrade too, and a run through a named account counts for `<channel>:<account>:<user>`.
 */
import { expect, test } from "bun:test";
import type { BudgetStore } from "../../src/budgets/store.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { Usage } from "../../src/runtime/types.ts";
import { createPostgresBudgetStore } from "../../src/store/postgres/budgets.ts";
import { PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { SqliteRuntimeStore } from "../../src/store/sqlite/runtime-store.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { admitRequest } from "./conformance.ts";
import { acrossPostgresUpgrade, acrossSqliteUpgrade } from "./support/upgrade.ts";

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
  await acrossSqliteUpgrade(
    "switchboard-budget-principals-",
    MIGRATION,
    (old) => before(new SqliteRuntimeStore(old)),
    (stores, inFlight) => after(stores.runtime, stores.budgets, inFlight),
  );
}, 60_000);

test("PostgreSQL: usage from before the upgrade stays the default account's; a named account's is its own", async () => {
  await acrossPostgresUpgrade(
    MIGRATION,
    async (sql) => {
      const store = new PostgresRuntimeStore(sql);
      return { store, inFlight: await before(store) };
    },
    (sql, { store, inFlight }) => after(store, createPostgresBudgetStore(sql), inFlight),
  );
}, 60_000);
