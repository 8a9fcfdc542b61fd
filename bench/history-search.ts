/**
 * History search on SQLite: admission throughput with the search index on against the same
 * store with its index triggers (messages, run ends, principals, rooms) dropped (alternating
 * rounds, same process); the terminal commit the same way (it indexes the run's input with its
 * answer); then search latency p50/p99 over an indexed corpus.
 *   npx bun bench/history-search.ts [--count 10000] [--rounds 5] [--messages 1000000] [--queries 300] [--turns 2000]
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { parseSearchQuery } from "../src/search/query.ts";
import type { SearchScope } from "../src/search/store.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { createScriptedModel } from "../test/support/llm/scripted-model.ts";
import { tempDir } from "../test/support/runtime.ts";
import { chatText, percentiles } from "./support/chat-text.ts";
import { alternatingRounds, terminalCommitsPerSecond } from "./support/index-rounds.ts";
import { argInt, printTable } from "./util.ts";

const count = argInt("--count", 10_000);
const rounds = argInt("--rounds", 5);
const corpus = argInt("--messages", 1_000_000);
const queries = argInt("--queries", 300);
const turns = argInt("--turns", 2_000);
const dir = tempDir("switchboard-bench-search-");

const INDEX_TRIGGERS = [
  "messages_search_insert",
  "messages_search_update",
  "messages_search_delete",
  "runs_search_inputs",
  "runs_principal",
  "runs_room",
];

/** The store at `name` with the search index on, or with every index trigger dropped. */
function openStores(name: string, indexed: boolean) {
  const stores = openSqliteStores(join(dir.path, `${name}.sqlite`));
  // IF EXISTS: the same script measures a build from before the run-end trigger.
  if (!indexed) for (const trigger of INDEX_TRIGGERS) stores.db.exec(`DROP TRIGGER IF EXISTS ${trigger}`);
  return stores;
}

const { rand, word, sentence } = chatText(42);

async function submits(n: number, name: string, indexed: boolean): Promise<number> {
  const stores = openStores(name, indexed);
  const runtime = new Runtime({
    store: stores.runtime,
    models: [{ label: "unused", model: createScriptedModel([]) }],
    readUsage: toUsage,
    executeRuns: false,
  });
  const start = performance.now();
  for (let i = 0; i < n; i += 64) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + 64); j++) {
      batch.push(
        runtime.submit({
          conversationId: `c-${j % 100}`,
          idempotencyKey: `k-${j}`,
          parts: [{ type: "text", text: `hello ${j} ${sentence(12)}` }],
          context: { channel: "telegram", principal: { id: `u${j % 100}` } },
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

await submits(2_000, "warm-on", true);
await submits(2_000, "warm-off", false);
const median = await alternatingRounds(rounds, (indexed, label) => submits(count, label, indexed));
printTable(`admission with the search index (${count} inputs, 64 in flight, median of ${rounds} rounds)`, [
  ["index triggers dropped", median.off, 1],
  ["index on (principals, rooms; input at run end)", median.on, median.on / median.off],
]);

// ---- the terminal commit: the answer, and now the run's input ----

async function terminals(n: number, name: string, indexed: boolean): Promise<number> {
  const stores = openStores(name, indexed);
  try {
    return await terminalCommitsPerSecond(stores.runtime, n);
  } finally {
    stores.close();
  }
}

await terminals(500, "warm-terminal-on", true);
await terminals(500, "warm-terminal-off", false);
const terminalMedian = await alternatingRounds(rounds, (indexed, label) =>
  terminals(turns, `terminal-${label}`, indexed),
);
printTable(
  `terminal commits with the search index (${turns} turns, one at a time, median of ${rounds} rounds)`,
  [
    ["index triggers dropped", terminalMedian.off, 1],
    ["index on (the answer and the run's input)", terminalMedian.on, terminalMedian.on / terminalMedian.off],
  ],
);

// ---- search latency over an indexed corpus ----
const file = join(dir.path, "corpus.sqlite");
openSqliteStores(file).close();
const raw = new Database(file, { strict: true });
const seedStart = performance.now();
const conversations = 2_000;
raw.transaction(() => {
  // The runs end once their messages are written (below), which indexes their users' inputs, as
  // the gateway's terminal commits do; answers are indexed as they are written.
  const run = raw.query(
    `INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids, assistant_message_id, context,
       created_at_ms)
     VALUES (?, ?, 'running', 'normal', 'queue', '[]', ?, ?, 1)`,
  );
  for (let c = 0; c < conversations; c++) {
    run.run(
      `r${c}`,
      `c${c}`,
      `a${c}`,
      JSON.stringify({ channel: "telegram", principal: { id: `u${c % 500}` } }),
    );
  }
})();
const insert = raw.query(
  "INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms) VALUES (?, ?, ?, ?, ?, 'complete', ?)",
);
for (let page = 0; page < corpus; page += 10_000) {
  raw.transaction(() => {
    for (let i = page; i < Math.min(corpus, page + 10_000); i++) {
      const c = i % conversations;
      const text = sentence(8 + Math.floor(rand() * 30));
      insert.run(
        `m${i}`,
        `c${c}`,
        `r${c}`,
        i % 2 ? "assistant" : "user",
        JSON.stringify([{ type: "text", text }]),
        i,
      );
    }
  })();
}
raw.run("UPDATE runs SET state = 'completed', finished_at_ms = 1, finish_seq = rowid");
const seeded = raw
  .query("SELECT (SELECT count(*) FROM message_search) AS indexed, (SELECT count(*) FROM messages) AS n")
  .get() as {
  indexed: number;
  n: number;
};
if (seeded.indexed !== seeded.n)
  throw new Error(`the corpus has ${seeded.n} messages but ${seeded.indexed} indexed`);
raw.close();
const seedSeconds = (performance.now() - seedStart) / 1000;

const stores = openSqliteStores(file);
const latencies = async (scope: () => SearchScope, make: () => string) => {
  const ms: number[] = [];
  for (let i = 0; i < queries; i++) {
    const parsed = parseSearchQuery(make());
    if (!parsed.ok) throw new Error(parsed.error);
    const start = performance.now();
    await stores.search.searchHistory({ query: parsed.query, scope: scope(), limit: 5 });
    ms.push(performance.now() - start);
  }
  return percentiles(ms);
};
const user = () => ({ kind: "principal", principal: `telegram:u${Math.floor(rand() * 500)}` }) as const;
const all = () => ({ kind: "all" }) as const;
const results = {
  "one word, the user's conversations": await latencies(user, () => word()),
  "two words, the user's conversations": await latencies(user, () => `${word()} ${word()}`),
  "two words, every conversation (operator)": await latencies(all, () => `${word()} ${word()}`),
  "prefix, the user's conversations": await latencies(user, () => `${word().slice(0, 3)}*`),
};
stores.close();
console.log(
  `\nsearch latency over ${corpus} indexed messages (${conversations} conversations, 500 users; seeded with triggers in ${seedSeconds.toFixed(1)} s)`,
);
for (const [name, r] of Object.entries(results)) {
  console.log(`  ${name.padEnd(44)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`);
}
dir.cleanup();
