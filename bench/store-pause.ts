/**
 * What a paced user's pause costs the store. The runtime store's work for one plain reply
 * (admission, acquisition, prompt context, terminal commit; no outbox), on a SQLite file opened as
 * the gateway opens it, back to back and with `--pause-ms` between replies, alternated; and for
 * scale, a minimal write transaction (one UPDATE, one INSERT), a minimal read transaction and a
 * bare indexed SELECT on the same file, timed the same two ways.
 *   npx bun bench/store-pause.ts [--replies 40] [--pause-ms 1000] [--rounds 2]
 * Prints medians in ms (the first five replies of each series left out).
 */
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const replies = argInt("--replies", 40);
const pauseMs = argInt("--pause-ms", 1000);
const rounds = argInt("--rounds", 2);

const dir = tempDir("switchboard-bench-store-pause-");
const stores = openSqliteStores(`${dir.path}/switchboard.sqlite`);
const store = stores.runtime;
const db = stores.db;
db.run("CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
db.run("CREATE TABLE bench_log (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
for (let i = 1; i <= 1000; i++) db.query("INSERT INTO bench_rows (v) VALUES (?)").run("x".repeat(200));
const update = db.query("UPDATE bench_rows SET v = ? WHERE id = ?");
const append = db.query("INSERT INTO bench_log (v) VALUES (?)");
const select = db.query("SELECT * FROM bench_rows WHERE id = ?");
const writeTx = db.transaction((i: number) => {
  update.run("y".repeat(200), (i % 1000) + 1);
  append.run("z".repeat(300));
});
const readTx = db.transaction((i: number) => select.get((i % 1000) + 1));

const PHASES = [
  "admit",
  "acquire",
  "prompt",
  "terminal",
  "reply",
  "write txn",
  "read txn",
  "select",
] as const;
type Timings = Record<(typeof PHASES)[number], number[]>;
let n = 0;

async function series(pause: number): Promise<Timings> {
  const t = Object.fromEntries(PHASES.map((p) => [p, [] as number[]])) as Timings;
  for (let i = 0; i < replies; i++) {
    if (pause > 0) await Bun.sleep(pause);
    n += 1;
    const t0 = performance.now();
    await store.admit({
      conversation: { id: "bench" },
      idempotencyKey: `k${n}`,
      fingerprint: `f${n}`,
      parts: [{ type: "text", text: `ping ${n}` }],
      context: { channel: "telegram", target: "1", surface: "telegram:dm" },
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `run-${n}`, messageId: `msg-${n}` },
      nowMs: Date.now(),
    });
    const t1 = performance.now();
    const { acquired } = await store.acquireNext({
      conversationId: "bench",
      owner: "bench",
      nowMs: Date.now(),
      leaseMs: 30_000,
    });
    const t2 = performance.now();
    await store.loadPromptContext(acquired!.run.id, { maxTurns: 40 });
    const t3 = performance.now();
    await store.commitTerminal({
      fence: acquired!.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: `pong ${n}` }],
      nowMs: Date.now(),
    });
    const t4 = performance.now();
    t.admit.push(t1 - t0);
    t.acquire.push(t2 - t1);
    t.prompt.push(t3 - t2);
    t.terminal.push(t4 - t3);
    t.reply.push(t4 - t0);
    // The minimal transactions after the reply's, so each series starts as cold as the other.
    if (pause > 0) await Bun.sleep(pause);
    let s = performance.now();
    writeTx.immediate(n);
    t["write txn"].push(performance.now() - s);
    s = performance.now();
    readTx.deferred(n);
    t["read txn"].push(performance.now() - s);
    s = performance.now();
    select.get((n % 1000) + 1);
    t.select.push(performance.now() - s);
  }
  return t;
}

const median = (values: number[]) => {
  const sorted = values.slice(5).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

console.log(
  `store work per reply, SQLite (WAL, synchronous NORMAL), ${replies} replies a series, medians in ms`,
);
console.log(`  ${"".padEnd(22)}${PHASES.map((p) => p.padStart(10)).join("")}`);
for (let round = 1; round <= rounds; round++) {
  for (const pause of [0, pauseMs]) {
    const t = await series(pause);
    const label = pause === 0 ? "back to back" : `${pause} ms pause`;
    console.log(
      `  ${`${label} (${round})`.padEnd(22)}${PHASES.map((p) => median(t[p]).toFixed(3).padStart(10)).join("")}`,
    );
  }
}
stores.close();
dir.cleanup();
