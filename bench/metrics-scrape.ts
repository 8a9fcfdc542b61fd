/**
 * What a /metrics scrape costs the gateway on SQLite as the database grows: the store's gauges
 * (runs and outbox records by state, delivery latency, oldest ambiguous record) read from a file
 * with `--rows` completed runs and as many delivered outbox records, against the counting they
 * replaced (`count(*) … GROUP BY state` over both tables, the newest delivered records by delivery
 * time), in the same process. bun:sqlite is synchronous: a scrape holds the event loop, and every
 * reply in flight waits for it.
 *   npx bun bench/metrics-scrape.ts [--rows 200000] [--rounds 5]
 */
import { join } from "node:path";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { storeGauges } from "../src/store/sqlite/metrics.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const rows = argInt("--rows", 200_000);
const rounds = argInt("--rounds", 5);
const dir = tempDir("switchboard-bench-metrics-");
const stores = openSqliteStores(join(dir.path, "metrics.sqlite"));
const { db } = stores;

const context = JSON.stringify({ channel: "telegram", principal: { id: "1001" }, target: "1001" });
db.transaction(() => {
  db.query(
    `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
     INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids,
       assistant_message_id, context, created_at_ms, finished_at_ms, finish_seq)
     SELECT printf('run_%09d', i), 'conv_' || (i % 500), 'completed', 'normal', 'queue', '[]',
       'msg_' || i, ?, i, i, i FROM c`,
  ).run(rows, context);
  db.query(
    `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
     INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, ordinal, kind,
       markdown, final, state, next_attempt_at_ms, history, created_at_ms, updated_at_ms)
     SELECT printf('obx_%09d', i), 'k' || i, printf('run_%09d', i), 'conv_' || (i % 500), 'telegram',
       'bot', 't' || (i % 500), i, 'message', 'a short answer of a few words', 1, 'delivered', i,
       '[]', i, i + 40 FROM c`,
  ).run(rows);
})();
db.exec("ANALYZE");

function counted() {
  const byState = (table: string) =>
    db.query(`SELECT state, count(*) AS n FROM ${table} GROUP BY state`).all();
  return {
    runs: byState("runs"),
    outbox: byState("outbox"),
    latencies: db
      .query(
        `SELECT updated_at_ms - created_at_ms AS ms FROM outbox WHERE state = 'delivered'
         ORDER BY updated_at_ms DESC LIMIT 1000`,
      )
      .all(),
    oldest: db.query("SELECT MIN(updated_at_ms) AS at FROM outbox WHERE state = 'ambiguous'").get(),
  };
}

function medianMs(fn: () => unknown): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const startedAt = performance.now();
    fn();
    times.push(performance.now() - startedAt);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const gauges = storeGauges(db);
if (gauges.runs.completed !== rows || gauges.outbox.delivered !== rows) {
  throw new Error(`the gauges disagree with the rows written: ${JSON.stringify(gauges)}`);
}
const before = medianMs(counted);
const now = medianMs(() => storeGauges(db));
console.log(`\n/metrics scrape on SQLite, ${rows} runs and ${rows} outbox records (median of ${rounds})`);
console.log(`  counting at scrape time (before)   ${before.toFixed(2).padStart(8)} ms`);
console.log(
  `  the store's gauges                 ${now.toFixed(2).padStart(8)} ms   ratio ${(before / now).toFixed(0)}×`,
);
stores.close();
dir.cleanup();
