/**
 * Migration 10 / 7 on a database with 100k messages written before it: the index is filled in
 * pages after the migration, and a backfill cut short resumes where it stopped.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { parseSearchQuery } from "../../src/search/query.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { backfillSearchIndex } from "../../src/store/sqlite/search.ts";
import { tempDir } from "../support/runtime.ts";

const MESSAGES = 100_000;
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
      const text = i === 77_777 ? "the needle is a blue heron" : `ordinary message ${i} about nothing`;
      message.run(`m${i}`, conversation, `r${i % 1000}`, JSON.stringify([{ type: "text", text }]), i);
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
