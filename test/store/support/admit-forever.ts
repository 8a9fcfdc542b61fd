/**
 * Child process for search-crash.test.ts: admits inputs until killed, into the SQLite file or the
 * PostgreSQL database (a postgres:// URL) in argv[2]. Prints "writing" once past the first batches.
 */
import type { RuntimeStore } from "../../../src/runtime/store.ts";
import { openPostgresRuntimeStore } from "../../../src/store/postgres/runtime-store.ts";
import { openSqliteStores } from "../../../src/store/sqlite/index.ts";

const where = process.argv[2]!;
const store: RuntimeStore = where.startsWith("postgres://")
  ? await openPostgresRuntimeStore(where)
  : openSqliteStores(where).runtime;
let i = 0;
for (;;) {
  const batch = [];
  for (let j = 0; j < 32; j += 1, i += 1) {
    batch.push(
      store.admit({
        conversation: { id: `c${i % 50}` },
        idempotencyKey: `k${i}`,
        fingerprint: `f${i}`,
        parts: [{ type: "text", text: `crash safe message number ${i} with some words` }],
        context: { channel: "telegram", principal: { id: `u${i % 50}` } },
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: `run${i}`, messageId: `msg${i}` },
        nowMs: 1_700_000_000_000 + i,
      }),
    );
  }
  await Promise.all(batch);
  if (i === 320) process.stdout.write("writing\n");
}
