/**
 * Child process for search-crash.test.ts: admits inputs until killed, into the SQLite file or the
 * PostgreSQL database (a postgres:// URL) in argv[2], and ends their runs as a gateway would: of
 * every four, two answered (a terminal commit), one cancelled while queued, one left pending.
 * Once past the first ten batches, prints how many inputs it admitted after each batch.
 */
import type { OperatorRuntimeStore } from "../../../src/operator/runtime-store.ts";
import { openPostgresRuntimeStore } from "../../../src/store/postgres/runtime-store.ts";
import { openSqliteStores } from "../../../src/store/sqlite/index.ts";

const where = process.argv[2]!;
const store: OperatorRuntimeStore = where.startsWith("postgres://")
  ? await openPostgresRuntimeStore(where)
  : openSqliteStores(where).runtime;
const nowMs = 1_700_000_000_000;

async function end(n: number): Promise<void> {
  if (n % 4 === 3) return;
  if (n % 4 === 2) {
    await store.requestStop(`run${n}`, "interrupted", nowMs + n);
    return;
  }
  const acquired = await store.acquireRun({
    runId: `run${n}`,
    owner: "w",
    nowMs: nowMs + n,
    leaseMs: 60_000,
  });
  await store.commitTerminal({
    fence: acquired!.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: `the answer to number ${n}` }],
    nowMs: nowMs + n,
  });
}

let i = 0;
for (;;) {
  const batch = [];
  for (let j = 0; j < 32; j += 1, i += 1) {
    batch.push(
      store.admit({
        // The pending ones wait in conversations of their own, where they hold up no other run.
        conversation: { id: `${i % 4 === 3 ? "p" : "c"}${i % 50}` },
        idempotencyKey: `k${i}`,
        fingerprint: `f${i}`,
        parts: [{ type: "text", text: `crash safe message number ${i} with some words` }],
        context: { channel: "telegram", principal: { id: `u${i % 50}` } },
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: `run${i}`, messageId: `msg${i}` },
        nowMs: nowMs + i,
      }),
    );
  }
  await Promise.all(batch);
  await Promise.all(Array.from({ length: 32 }, (_, k) => end(i - 32 + k)));
  if (i >= 320) process.stdout.write(`${i}\n`);
}
