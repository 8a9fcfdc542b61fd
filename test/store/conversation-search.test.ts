/**
 * The conversation search on both engines (conversation-search-conformance.ts), and its migration
 * (SQLite's 19, PostgreSQL's 17) on a database written before it: the users of existing runs and
 * the existing channel keys are searchable at once, and a malformed context is skipped.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { migrate, MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/schema.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { createDatabase } from "../support/postgres.ts";
import { tempDir } from "../support/runtime.ts";
import { runConversationSearchConformance } from "./conversation-search-conformance.ts";
import { forEachEngine } from "./support/engines.ts";

forEachEngine((engine, open) =>
  runConversationSearchConformance(engine, async () => {
    const { backend, close } = await open();
    return { backend, close };
  }),
);

const CONVERSATIONS = 2000;
const clock = new FakeClock(10_000_000, { instantSleeps: true });

/** Rows as a database before the migration holds them: conversation i, its key, one run of user u<i>. */
function rowsBefore() {
  const conversations = Array.from({ length: CONVERSATIONS }, (_, i) => ({
    id: `c${i}`,
    version: 1,
    last_seq: 0,
    created_at_ms: 1000 + i,
  }));
  const keys = conversations.map((c, i) => ({
    key: `tg:bot:dm:chat${i}`,
    conversation_id: c.id,
    generation: 1,
    updated_at_ms: 1,
  }));
  const runs = conversations.map((c, i) => ({
    id: `r${i}`,
    conversation_id: c.id,
    state: "completed",
    priority: "normal",
    policy: "queue",
    input_message_ids: "[]",
    assistant_message_id: `a${i}`,
    // One run whose context is not an object: no term, no failed migration.
    context:
      i === 5
        ? JSON.stringify("not an object")
        : JSON.stringify({ channel: "telegram", principal: { id: `u${i}`, name: `Person Number ${i}` } }),
    created_at_ms: 1000 + i,
  }));
  return { conversations, keys, runs };
}

async function expectSearchable(operator: OperatorService): Promise<void> {
  const ids = async (query: string) =>
    (await operator.conversations.list({ query, limit: 1000 })).items.map((c) => c.id);
  expect(await ids("person number 42")).toEqual([
    ...Array.from({ length: 10 }, (_, k) => `c${429 - k}`),
    "c42",
  ]);
  expect(await ids("u3")).toHaveLength(111);
  expect(await ids("dm:chat1999")).toEqual(["c1999"]);
  expect(await ids("PERSON NUMBER 5")).not.toContain("c5");
  expect(await ids("dm:chat5")).toContain("c5");
}

test("SQLite: existing runs' users and keys are searchable after the migration", async () => {
  const dir = tempDir("switchboard-lookup-migration-");
  try {
    const file = join(dir.path, "before.sqlite");
    const before = openDatabase({
      filename: file,
      migrations: MIGRATIONS.slice(
        0,
        MIGRATIONS.findIndex((m) => m.name === "conversation-lookup"),
      ),
    });
    const { conversations, keys, runs } = rowsBefore();
    before.transaction(() => {
      for (const c of conversations) {
        before
          .query("INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES (?, ?, ?, ?)")
          .run(c.id, c.version, c.last_seq, c.created_at_ms);
      }
      for (const k of keys) {
        before
          .query(
            "INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?, ?, ?, ?)",
          )
          .run(k.key, k.conversation_id, k.generation, k.updated_at_ms);
      }
      for (const r of runs) {
        before
          .query(
            `INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids, assistant_message_id, context, created_at_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
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
    before.close();
    const stores = openSqliteStores(file);
    try {
      await expectSearchable(createOperatorService({ stores, clock }));
    } finally {
      stores.close();
    }
  } finally {
    dir.cleanup();
  }
}, 60_000);

test("PostgreSQL: existing runs' users and keys are searchable after the migration", async () => {
  const db = await createDatabase();
  try {
    const sql = new SQL(db.url, { adapter: "postgres", max: 2 });
    try {
      await migrate(
        sql,
        PG_MIGRATIONS.slice(
          0,
          PG_MIGRATIONS.findIndex((m) => m.name === "conversation-lookup"),
        ),
      );
      const { conversations, keys, runs } = rowsBefore();
      await sql`INSERT INTO conversations ${sql(conversations)}`;
      await sql`INSERT INTO conversation_keys ${sql(keys)}`;
      await sql`INSERT INTO runs ${sql(runs)}`;
    } finally {
      await sql.close();
    }
    const backend = await openPostgresBackend(db.url);
    try {
      await expectSearchable(createOperatorService({ stores: backend, clock }));
    } finally {
      await backend.close();
    }
  } finally {
    await db.drop();
  }
}, 60_000);
