/**
 * What preparing statements again on every run cost the store (see src/store/sqlite/plan-once.ts).
 * Two copies of one SQLite file with `--history` earlier replies in one chat: one opened as the
 * gateway opens it (parameters written `+?`), one with the same pragmas and the SQL as written.
 * Each takes `--replies` plain replies through the store's own calls (admission, acquisition,
 * prompt context, terminal commit with its outbox record, the outbox worker's look, the sending
 * mark and the delivery), alternating, back to back and with `--pause-ms` before each.
 *   npx bun bench/sql-replanning.ts [--history 200] [--replies 40] [--pause-ms 1000]
 * Prints the median reply in ms (the first five of each series left out) and the ratio.
 */
import { Database } from "bun:sqlite";
import { copyFileSync } from "node:fs";
import { applyPragmas } from "../src/store/sqlite/database.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { SqliteOutboxRepository } from "../src/store/sqlite/outbox.ts";
import { SqliteRuntimeStore } from "../src/store/sqlite/runtime-store.ts";
import { tempDir } from "../test/support/runtime.ts";
import { deliverDue, fillHistory, storeReply } from "./support/history.ts";
import { argInt } from "./util.ts";

const history = argInt("--history", 200);
const replies = argInt("--replies", 40);
const pauseMs = argInt("--pause-ms", 1000);

const dir = tempDir("switchboard-bench-replanning-");
const planned = `${dir.path}/planned.sqlite`;
const asWritten = `${dir.path}/as-written.sqlite`;
await fillHistory(planned, { replies: history, conversations: 1, channel: "telegram" });
copyFileSync(planned, asWritten);

const gateway = openSqliteStores(planned);
const rawDb = new Database(asWritten, { strict: true });
applyPragmas(rawDb, 3000);
const raw = { runtime: new SqliteRuntimeStore(rawDb), outbox: new SqliteOutboxRepository(rawDb) };
const bots = [
  { label: "parameters as +? (the gateway)", stores: gateway, times: new Map<number, number[]>() },
  { label: "SQL as written", stores: raw, times: new Map<number, number[]>() },
];

let n = 0;
for (const pause of [0, pauseMs]) {
  for (let i = 0; i < replies; i++) {
    for (const bot of bots) {
      if (pause > 0) await Bun.sleep(pause);
      n += 1;
      const started = performance.now();
      await storeReply(bot.stores, {
        id: `bench-${n}`,
        conversationId: "history-chat-0",
        target: "800000",
        channel: "telegram",
      });
      await deliverDue(bot.stores.outbox, "telegram", 1);
      const times = bot.times.get(pause) ?? [];
      times.push(performance.now() - started);
      bot.times.set(pause, times);
    }
  }
}

const median = (values: number[]) => {
  const sorted = values.slice(5).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
console.log(
  `store work per reply with ${history} earlier replies in the chat, SQLite, median of ${replies - 5} in ms`,
);
console.log(`  ${"".padEnd(34)}${"back to back".padStart(14)}${`${pauseMs} ms pause`.padStart(16)}`);
for (const bot of bots) {
  const cells = [0, pauseMs].map((pause) => median(bot.times.get(pause)!).toFixed(3));
  console.log(`  ${bot.label.padEnd(34)}${cells[0]!.padStart(14)}${cells[1]!.padStart(16)}`);
}
const ratios = [0, pauseMs].map(
  (pause) => median(bots[0]!.times.get(pause)!) / median(bots[1]!.times.get(pause)!),
);
console.log(
  `  ${"ratio".padEnd(34)}${ratios[0]!.toFixed(2).padStart(14)}${ratios[1]!.toFixed(2).padStart(16)}`,
);
gateway.close();
rawDb.close();
dir.cleanup();
