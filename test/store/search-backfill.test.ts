/**
 * The history-search migration (SQLite's 12, PostgreSQL's 10) on a database with 100k messages
 * written before it: the index is filled in pages after the migration, and a backfill cut short
 * resumes where it stopped.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import { parseSearchQuery } from "../../src/search/query.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { migrate, MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/schema.ts";
import { backfillSearchIndex as backfillPostgres } from "../../src/store/postgres/search.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { backfillSearchIndex } from "../../src/store/sqlite/search.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";

useTestServer();

const MESSAGES = 100_000;
const NEEDLE = 77_777;
/** Message i of the seeded history: conversation c(i % 1000), run r(i % 1000) of user u(i % 1000). */
const textOf = (i: number) =>
  i === NEEDLE ? "the needle is a blue heron" : `ordinary message ${i} about nothing`;
const query = (text: string) => {
  const parsed = parseSearchQuery(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.query;
};

function seedBeforeSearch(file: string): void {
  const before = openDatabase({
    filename: file,
    migrations: MIGRATIONS.slice(
      0,
      MIGRATIONS.findIndex((m) => m.name === "history-search"),
    ),
  });
  before.transaction(() => {
    const run = before.query(
      `INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids, assistant_message_id, context, created_at_ms)
       VALUES (?, ?, 'completed', 'normal', 'queue', '[]', ?, ?, 1)`,
    );
    const message = before.query(
      "INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms) VALUES (?, ?, ?, 'user', ?, 'complete', ?)",
    );
    for (let i = 0; i < MESSAGES; i += 1) {
      const conversation = `c${i % 1000}`;
      if (i < 1000) {
        run.run(
          `r${i}`,
          conversation,
          `a${i}`,
          JSON.stringify({ channel: "telegram", principal: { id: `u${i % 1000}` } }),
        );
      }
      message.run(
        `m${i}`,
        conversation,
        `r${i % 1000}`,
        JSON.stringify([{ type: "text", text: textOf(i) }]),
        i,
      );
    }
  })();
  before.close();
}

test("a database with 100k messages is indexed in pages after the migration; a cut-short backfill resumes", async () => {
  const dir = tempDir("switchboard-backfill-");
  try {
    const file = join(dir.path, "big.sqlite");
    seedBeforeSearch(file);
    // Migrate only, then index two pages, as a process killed during the backfill would leave it.
    const migrated = openDatabase({ filename: file, migrations: MIGRATIONS });
    const cursor = () =>
      Number(
        (
          migrated.query("SELECT value FROM switchboard_meta WHERE key = 'search_backfill_until'").get() as {
            value: string;
          }
        ).value,
      );
    expect(cursor()).toBe(MESSAGES);
    const firstPages = (() => {
      let indexed = 0;
      for (let page = 0; page < 2; page += 1) {
        const until = cursor();
        migrated.transaction(() => {
          migrated
            .query(
              `INSERT INTO message_search (rowid, body) SELECT ord, json_extract(parts, '$[0].text') FROM messages WHERE ord > ? AND ord <= ?`,
            )
            .run(until - 5000, until);
          migrated
            .query("UPDATE switchboard_meta SET value = ? WHERE key = 'search_backfill_until'")
            .run(String(until - 5000));
        })();
        indexed += 5000;
      }
      return indexed;
    })();
    expect(firstPages).toBe(10_000);
    expect(backfillSearchIndex(migrated)).toBe(MESSAGES - 10_000);
    expect(cursor()).toBe(0);
    const count = migrated.query("SELECT count(*) AS n FROM message_search").get() as { n: number };
    expect(count.n).toBe(MESSAGES);
    migrated.close();

    const stores = openSqliteStores(file);
    try {
      const hits = await stores.search.searchHistory({
        query: query("blue heron"),
        scope: { kind: "principal", principal: "telegram:u777" },
        limit: 5,
      });
      expect(hits.map((h) => h.ref)).toEqual(["m77777"]);
      expect(
        await stores.search.searchHistory({
          query: query("blue heron"),
          scope: { kind: "principal", principal: "telegram:u778" },
          limit: 5,
        }),
      ).toEqual([]);
    } finally {
      stores.close();
    }
  } finally {
    dir.cleanup();
  }
}, 120_000);

test("PostgreSQL: a database with 100k messages is indexed in pages after the migration; a cut-short backfill resumes", async () => {
  const db = await createDatabase();
  const sql = new SQL(db.url, { adapter: "postgres", max: 2 });
  try {
    const searchVersion = PG_MIGRATIONS.findIndex((m) => m.name === "history-search");
    await migrate(sql, PG_MIGRATIONS.slice(0, searchVersion));
    const runs = Array.from({ length: 1000 }, (_, i) => ({
      id: `r${i}`,
      conversation_id: `c${i}`,
      state: "completed",
      priority: "normal",
      policy: "queue",
      input_message_ids: "[]",
      assistant_message_id: `a${i}`,
      context: JSON.stringify({ channel: "telegram", principal: { id: `u${i}` } }),
      created_at_ms: 1,
    }));
    await sql`INSERT INTO runs ${sql(runs)}`;
    for (let page = 0; page < MESSAGES; page += 5000) {
      const rows = Array.from({ length: 5000 }, (_, k) => {
        const i = page + k;
        return {
          id: `m${i}`,
          conversation_id: `c${i % 1000}`,
          run_id: `r${i % 1000}`,
          role: "user",
          parts: JSON.stringify([{ type: "text", text: textOf(i) }]),
          status: "complete",
          created_at_ms: i,
        };
      });
      await sql`INSERT INTO messages ${sql(rows)}`;
    }
    // Migrate only; then index two pages, as a process killed during the backfill leaves it.
    await migrate(sql);
    const cursor = async () =>
      Number(
        (
          await sql<
            Array<{ value: string }>
          >`SELECT value FROM switchboard_meta WHERE key = 'search_backfill_until'`
        )[0]!.value,
      );
    const top = await cursor();
    expect(top).toBeGreaterThanOrEqual(MESSAGES);
    for (let page = 0; page < 2; page += 1) {
      const until = await cursor();
      await sql.begin(async (tx) => {
        await tx`INSERT INTO message_search (ord, conversation_id, body, search)
          SELECT ord, conversation_id, switchboard_search_text(parts), to_tsvector('simple', switchboard_search_text(parts))
          FROM messages WHERE ord > ${until - 5000} AND ord <= ${until}`;
        await tx`UPDATE switchboard_meta SET value = ${String(until - 5000)} WHERE key = 'search_backfill_until'`;
      });
    }
    expect(await backfillPostgres(sql)).toBe(MESSAGES - 10_000);
    expect(await cursor()).toBe(0);
    const [count] = await sql<Array<{ n: string }>>`SELECT count(*) AS n FROM message_search`;
    expect(Number(count!.n)).toBe(MESSAGES);

    const backend = await openPostgresBackend(db.url);
    try {
      const hits = await backend.search.searchHistory({
        query: query("blue heron"),
        scope: { kind: "principal", principal: "telegram:u777" },
        limit: 5,
      });
      expect(hits.map((h) => h.ref)).toEqual([`m${NEEDLE}`]);
      expect(
        await backend.search.searchHistory({
          query: query("blue heron"),
          scope: { kind: "principal", principal: "telegram:u778" },
          limit: 5,
        }),
      ).toEqual([]);
    } finally {
      await backend.close();
    }
  } finally {
    await sql.close();
    await db.drop();
  }
}, 180_000);
