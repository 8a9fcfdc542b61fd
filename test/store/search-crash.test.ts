/**
 * The search index after a SIGKILL in the middle of writes: a child process admits inputs as fast
 * as it can and is killed; on the same file every message is indexed exactly once, FTS5's own
 * integrity check passes, and the last message written is found.
 */
import type { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { parseSearchQuery } from "../../src/search/query.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { tempDir } from "../support/runtime.ts";

test("SIGKILL mid-write leaves messages and their index consistent", async () => {
  const dir = tempDir("switchboard-search-crash-");
  try {
    const file = join(dir.path, "crash.sqlite");
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "support", "admit-forever.ts"), file], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const reader = child.stdout.getReader();
    await reader.read(); // "writing": past the first batches
    await Bun.sleep(700);
    child.kill("SIGKILL");
    await child.exited;

    const stores = openSqliteStores(file);
    try {
      const db = stores.db as Database;
      const messages = (db.query("SELECT count(*) AS n FROM messages").get() as { n: number }).n;
      const indexed = (db.query("SELECT count(*) AS n FROM message_search").get() as { n: number }).n;
      expect(messages).toBeGreaterThan(320);
      expect(indexed).toBe(messages);
      const missing = db
        .query("SELECT count(*) AS n FROM messages WHERE ord NOT IN (SELECT rowid FROM message_search)")
        .get() as { n: number };
      expect(missing.n).toBe(0);
      db.exec("INSERT INTO message_search (message_search) VALUES ('integrity-check')");
      const last = db.query("SELECT id, parts FROM messages ORDER BY ord DESC LIMIT 1").get() as {
        id: string;
        parts: string;
      };
      const number = /number (\d+)/.exec(last.parts)![1]!;
      const parsed = parseSearchQuery(`"number ${number}"`);
      if (!parsed.ok) throw new Error(parsed.error);
      const hits = await stores.search.searchHistory({
        query: parsed.query,
        scope: { kind: "all" },
        limit: 3,
      });
      expect(hits.map((h) => h.ref)).toContain(last.id);
    } finally {
      stores.close();
    }
  } finally {
    dir.cleanup();
  }
}, 60_000);
