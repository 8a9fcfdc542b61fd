/**
 * The operator's conversation search (`conversations.list({ query })`, what the console's search
 * and `conversations list -q` ask) on both engines: latency p50/p99 of one page (limit 100) over
 * N conversations, each with one run of its own user (id and name) and a channel key, rows
 * written through the tables' triggers as admissions write them; the unfiltered first page beside it.
 *   npx bun bench/conversation-search.ts [--conversations 100000] [--queries 50]
 */
import { join } from "node:path";
import { SQL } from "bun";
import { createOperatorService, type OperatorService } from "../src/operator/service.ts";
import { openPostgresBackend } from "../src/store/postgres/backend.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { type Clock, systemClock } from "../src/util/clock.ts";
import { createDatabase, stopTestServer } from "../test/support/postgres.ts";
import { tempDir } from "../test/support/runtime.ts";
import { percentiles } from "./support/chat-text.ts";
import { argInt } from "./util.ts";

const conversations = argInt("--conversations", 100_000);
const queries = argInt("--queries", 50);
const clock: Clock = { ...systemClock, sleep: async () => {} };

/** Conversation i: key tg:bot:dm:<i>, user u<i> named "Person <i>"; conversation 0 is the oldest. */
function rows(from: number, to: number) {
  const range = Array.from({ length: to - from }, (_, k) => from + k);
  return {
    conversations: range.map((i) => ({ id: `c${i}`, version: 1, last_seq: 0, created_at_ms: 1000 + i })),
    keys: range.map((i) => ({
      key: `tg:bot:dm:${i}`,
      conversation_id: `c${i}`,
      generation: 1,
      updated_at_ms: 1,
    })),
    runs: range.map((i) => ({
      id: `r${i}`,
      conversation_id: `c${i}`,
      state: "completed",
      priority: "normal",
      policy: "queue",
      input_message_ids: "[]",
      assistant_message_id: `a${i}`,
      context: JSON.stringify({ channel: "telegram", principal: { id: `u${i}`, name: `Person ${i}` } }),
      created_at_ms: 1000 + i,
    })),
  };
}

const CASES: Array<[label: string, query: string | undefined]> = [
  ["no query (first page)", undefined],
  ["the oldest user's name (1 match)", "person 0"],
  ["a user id (1 match)", `u${conversations - 7}`],
  ["many matches ('person 1', ~11%)", "person 1"],
  ["no match", "nobody-at-all"],
];

async function measure(engine: string, operator: OperatorService): Promise<void> {
  console.log(`\n${engine}, ${conversations.toLocaleString("en")} conversations`);
  for (const [label, query] of CASES) {
    const ms: number[] = [];
    let found = 0;
    for (let i = 0; i < queries; i += 1) {
      const start = performance.now();
      const page = await operator.conversations.list({ limit: 100, ...(query ? { query } : {}) });
      ms.push(performance.now() - start);
      found = page.items.length;
    }
    const { p50, p99 } = percentiles(ms);
    console.log(
      `  ${label.padEnd(36)} p50 ${p50.toFixed(1).padStart(7)} ms   p99 ${p99.toFixed(1).padStart(7)} ms   (${found} on the page)`,
    );
  }
}

async function sqlite(): Promise<void> {
  const dir = tempDir("switchboard-bench-conversation-search-");
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  try {
    const { db } = stores;
    const insert = {
      conversation: db.query(
        "INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
      ),
      key: db.query(
        "INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?1, ?2, ?3, ?4)",
      ),
      run: db.query(
        `INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids, assistant_message_id, context, created_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
      ),
    };
    for (let from = 0; from < conversations; from += 10_000) {
      const page = rows(from, Math.min(conversations, from + 10_000));
      db.transaction(() => {
        for (const c of page.conversations)
          insert.conversation.run(c.id, c.version, c.last_seq, c.created_at_ms);
        for (const k of page.keys) insert.key.run(k.key, k.conversation_id, k.generation, k.updated_at_ms);
        for (const r of page.runs) {
          insert.run.run(
            r.id,
            r.conversation_id,
            r.state,
            r.priority,
            r.policy,
            r.input_message_ids,
            r.assistant_message_id,
            r.context,
            r.created_at_ms,
          );
        }
      })();
    }
    db.exec("ANALYZE");
    await measure("SQLite", createOperatorService({ stores, clock }));
  } finally {
    stores.close();
    dir.cleanup();
  }
}

async function postgres(): Promise<void> {
  const database = await createDatabase();
  try {
    const backend = await openPostgresBackend(database.url);
    try {
      const sql = new SQL(database.url, { adapter: "postgres", max: 1 });
      try {
        for (let from = 0; from < conversations; from += 5_000) {
          const page = rows(from, Math.min(conversations, from + 5_000));
          await sql.begin(async (tx) => {
            await tx`INSERT INTO conversations ${tx(page.conversations)}`;
            await tx`INSERT INTO conversation_keys ${tx(page.keys)}`;
            await tx`INSERT INTO runs ${tx(page.runs)}`;
          });
        }
        await sql`ANALYZE`;
      } finally {
        await sql.close();
      }
      await measure("PostgreSQL", createOperatorService({ stores: backend, clock }));
    } finally {
      await backend.close();
    }
  } finally {
    await database.drop();
  }
}

await sqlite();
await postgres();
await stopTestServer();
