/**
 * The store's gauges (runs and outbox records by state, for /metrics and the dashboard) on both
 * engines, through admissions, terminal commits, deliveries, failures and a purge; and on SQLite,
 * where they are counted as rows change (migration 21), a database upgraded with rows in it.
 */

import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { StoreBackend } from "../../src/store/backend.ts";
import { childAgentsSchemaSql } from "../../src/store/child-sql.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteBackend } from "../../src/store/sqlite/backend.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS } from "../../src/store/sqlite/index.ts";
import { SqliteRuntimeStore } from "../../src/store/sqlite/runtime-store.ts";
import { SQLITE_DIALECT } from "../../src/store/tables.sql.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { admitRequest } from "./conformance.ts";

useTestServer();

const T0 = 1_800_000_000_000;
type Stores = Pick<StoreBackend, "runtime" | "outbox" | "gauges">;

/** Admits one input in `conversationId`; with `end`, runs it to that terminal state with a reply. */
async function turn(
  stores: Pick<StoreBackend, "runtime">,
  conversationId: string,
  key: string,
  end?: "completed" | "failed",
) {
  const admitted = await stores.runtime.admit(admitRequest(conversationId, key, { nowMs: T0 }));
  if (!end) return admitted;
  const acquired = await stores.runtime.acquireRun({
    runId: admitted.runId,
    owner: "gauges",
    nowMs: T0,
    leaseMs: 60_000,
  });
  if (!acquired) throw new Error(`could not acquire ${admitted.runId}`);
  await stores.runtime.commitTerminal({
    fence: acquired.fence,
    state: end,
    assistantParts: [{ type: "text", text: `answer to ${key}` }],
    ...(end === "failed" ? { error: "the model failed" } : {}),
    delivery: {
      runId: admitted.runId,
      conversationId: admitted.conversationId,
      channel: "telegram",
      account: "bot",
      target: conversationId,
      state: end,
      text: `answer to ${key}`,
    },
    nowMs: T0,
  });
  return admitted;
}

async function recordOf(stores: Stores, conversationId: string) {
  const [record] = await stores.outbox.list({ conversationId });
  if (!record) throw new Error(`no outbox record in ${conversationId}`);
  return record;
}

async function exercise(stores: Stores): Promise<void> {
  await turn(stores, "conv-a", "a1", "completed");
  await turn(stores, "conv-b", "b1", "completed");
  await turn(stores, "conv-b", "b2");
  await turn(stores, "conv-c", "c1", "failed");
  const gauges = await stores.gauges();
  expect(gauges.runs).toEqual({ completed: 2, queued: 1, failed: 1 });
  expect(gauges.outbox).toEqual({ pending: 3 });

  const a = await recordOf(stores, "conv-a");
  await stores.outbox.markSending(a.id, T0 + 1);
  expect((await stores.gauges()).outbox).toEqual({ pending: 2, sending: 1 });
  await stores.outbox.markDelivered(a.id, { messageIds: ["m1"] }, T0 + 5);
  const b = await recordOf(stores, "conv-b");
  await stores.outbox.markSending(b.id, T0 + 6);
  await stores.outbox.markFailed(b.id, "chat not found", T0 + 7);
  const afterSends = await stores.gauges();
  expect(afterSends.outbox).toEqual({ pending: 1, delivered: 1, failed: 1 });
  expect(afterSends.deliveryLatencyMs).toMatchObject({ count: 1, p50: 5 });

  // A purge deletes the conversation's runs; its delivered record stays (without its text).
  await stores.runtime.purgeConversation("conv-a", { nowMs: T0 + 10 });
  const afterPurge = await stores.gauges();
  expect(afterPurge.runs).toEqual({ completed: 1, queued: 1, failed: 1 });
  expect(afterPurge.outbox).toEqual({ pending: 1, delivered: 1, failed: 1 });
}

describe("store gauges", () => {
  test("SQLite: counts follow every change of state", async () => {
    const dir = tempDir("switchboard-gauges-");
    const backend = openSqliteBackend(join(dir.path, "g.sqlite"));
    try {
      await exercise(backend);
    } finally {
      await backend.close();
      dir.cleanup();
    }
  });

  test("PostgreSQL: counts follow every change of state", async () => {
    const db = await createDatabase();
    const backend = await openPostgresBackend(db.url);
    try {
      await exercise(backend);
    } finally {
      await backend.close();
      await db.drop();
    }
  }, 60_000);

  test("SQLite: a database upgraded with rows in it counts them, then follows changes", async () => {
    const dir = tempDir("switchboard-gauges-upgrade-");
    const file = join(dir.path, "upgrade.sqlite");
    try {
      const before = openDatabase({
        filename: file,
        migrations: MIGRATIONS.slice(
          0,
          MIGRATIONS.findIndex((m) => m.name === "state-counts"),
        ),
      });
      // This build's terminal commit reads the child agents' links (a later migration): the table
      // exists while the old rows are written and goes before the upgrade creates it.
      before.exec(childAgentsSchemaSql(SQLITE_DIALECT));
      const old = { runtime: new SqliteRuntimeStore(before) };
      await turn(old, "conv-a", "a1", "completed");
      await turn(old, "conv-b", "b1");
      before.exec("DROP TABLE child_agents");
      before.close();

      const backend = openSqliteBackend(file);
      try {
        expect((await backend.gauges()).runs).toEqual({ completed: 1, queued: 1 });
        await turn(backend, "conv-c", "c1", "completed");
        const gauges = await backend.gauges();
        expect(gauges.runs).toEqual({ completed: 2, queued: 1 });
        expect(gauges.outbox).toEqual({ pending: 2 });
      } finally {
        await backend.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});
