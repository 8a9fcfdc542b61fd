/**
 * Admission throughput: `runtime.submit()` (admission only, no model call) against raw bun:sqlite
 * single-row INSERT transactions with the same pragmas, in the same process.
 *   npx bun bench/admission.ts [--count 20000]
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { Runtime } from "../src/runtime/runtime.ts";
import { applyPragmas } from "../src/store/sqlite/database.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { createScriptedModel } from "../test/support/llm/scripted-model.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt, printTable } from "./util.ts";

const count = argInt("--count", 20_000);
const dir = tempDir("switchboard-bench-");

function rawInserts(n: number): number {
  const db = new Database(join(dir.path, `raw-${n}.sqlite`), { create: true, strict: true });
  applyPragmas(db, 3000);
  db.exec("CREATE TABLE t (id TEXT PRIMARY KEY, conversation TEXT, body TEXT, at INTEGER)");
  const insert = db.query("INSERT INTO t (id, conversation, body, at) VALUES (?, ?, ?, ?)");
  const one = db.transaction((i: number) => insert.run(`id-${i}`, `c-${i % 100}`, `hello ${i}`, i));
  const start = performance.now();
  for (let i = 0; i < n; i++) one.immediate(i);
  const seconds = (performance.now() - start) / 1000;
  db.close();
  return n / seconds;
}

async function submits(n: number, inFlight: number, name: string): Promise<number> {
  const stores = openSqliteStores(join(dir.path, `${name}.sqlite`));
  const runtime = new Runtime({
    store: stores.runtime,
    models: [{ label: "unused", model: createScriptedModel([]) }],
    executeRuns: false,
  });
  const start = performance.now();
  for (let i = 0; i < n; i += inFlight) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + inFlight); j++) {
      batch.push(
        runtime.submit({
          conversationId: `c-${j % 100}`,
          idempotencyKey: `k-${j}`,
          parts: [{ type: "text", text: `hello ${j}` }],
        }).admission,
      );
    }
    await Promise.all(batch);
  }
  const seconds = (performance.now() - start) / 1000;
  await runtime.close({ gracePeriodMs: 0 });
  stores.close();
  return n / seconds;
}

// Warm up both paths once so JIT and page cache do not favour either side.
rawInserts(2_000);
await submits(2_000, 1, "warm");
const raw = rawInserts(count);
const sequential = await submits(count, 1, "sequential");
const burst = await submits(count, 64, "burst");
printTable(`admission throughput (${count} inputs)`, [
  ["raw single-row INSERT transactions", raw, 1],
  ["submit(), one at a time", sequential, sequential / raw],
  ["submit(), 64 in flight (group commit)", burst, burst / raw],
]);
dir.cleanup();
