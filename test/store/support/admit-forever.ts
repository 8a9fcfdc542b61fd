/** Child process for search-crash.test.ts: admits inputs into the SQLite file in argv[2] until killed. */
import { openSqliteStores } from "../../../src/store/sqlite/index.ts";

const stores = openSqliteStores(process.argv[2]!);
let i = 0;
for (;;) {
  const batch = [];
  for (let j = 0; j < 32; j += 1, i += 1) {
    batch.push(
      stores.runtime.admit({
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
