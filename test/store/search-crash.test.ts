/**
 * The search index after a SIGKILL in the middle of writes, on both engines: a child process
 * admits inputs and ends most of their runs as fast as it can and is killed; then exactly the
 * messages search-timing.ts says belong in the index are in it, each once (answers, the inputs of
 * ended runs; not the inputs still pending), FTS5's own integrity check passes on SQLite, and the
 * last input answered is found.
 */
import type { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import { parseSearchQuery, type SearchQuery } from "../../src/search/query.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { searchableNow } from "../../src/store/search-timing.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";

useTestServer();

/** Starts the writer on `where` (a file or a postgres:// URL) and SIGKILLs it mid-write. */
async function killMidWrite(where: string): Promise<void> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "support", "admit-forever.ts"), where], {
    stdout: "pipe",
    stderr: "inherit",
  });
  // Killed once it reports 640 inputs: past the first batches, in the middle of the next ones.
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let printed = "";
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    printed += decoder.decode(read.value);
    const counts = printed.split("\n").filter(Boolean).map(Number);
    if ((counts.at(-1) ?? 0) >= 640) break;
  }
  child.kill("SIGKILL");
  await child.exited;
}

function phrase(text: string): SearchQuery {
  const parsed = parseSearchQuery(`"${text}"`);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.query;
}

test("SQLite: SIGKILL mid-write leaves messages and their index consistent", async () => {
  const dir = tempDir("switchboard-search-crash-");
  try {
    const file = join(dir.path, "crash.sqlite");
    await killMidWrite(file);

    const stores = openSqliteStores(file);
    try {
      const db = stores.db as Database;
      const count = (sql: string) => (db.query(sql).get() as { n: number }).n;
      const messages = count("SELECT count(*) AS n FROM messages");
      const pending = count(`SELECT count(*) AS n FROM messages AS m WHERE NOT ${searchableNow("m")}`);
      expect(messages).toBeGreaterThan(320);
      expect(pending).toBeGreaterThan(0);
      expect(count("SELECT count(*) AS n FROM message_search")).toBe(messages - pending);
      expect(
        count(`SELECT count(*) AS n FROM messages AS m
          WHERE ${searchableNow("m")} <> (m.ord IN (SELECT rowid FROM message_search))`),
      ).toBe(0);
      db.exec("INSERT INTO message_search (message_search) VALUES ('integrity-check')");
      const last = db
        .query(`SELECT m.id, m.parts FROM messages AS m
          WHERE m.role = 'user' AND ${searchableNow("m")} ORDER BY m.ord DESC LIMIT 1`)
        .get() as { id: string; parts: string };
      const number = /number (\d+)/.exec(last.parts)![1]!;
      const hits = await stores.search.searchHistory({
        query: phrase(`number ${number}`),
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

test("PostgreSQL: SIGKILL mid-write leaves messages and their index consistent", async () => {
  const db = await createDatabase();
  const sql = new SQL(db.url, { adapter: "postgres", max: 1 });
  try {
    await killMidWrite(db.url);
    // The killed connections' open transactions are rolled back by the server as it notices them.
    const [counts] = await sql.unsafe<
      Array<{ messages: string; pending: string; indexed: string; wrong: string; stale: string }>
    >(`
      SELECT (SELECT count(*) FROM messages) AS messages,
        (SELECT count(*) FROM messages AS m WHERE NOT ${searchableNow("m")}) AS pending,
        (SELECT count(*) FROM message_search) AS indexed,
        (SELECT count(*) FROM messages AS m
          WHERE ${searchableNow("m")} <> EXISTS (SELECT 1 FROM message_search AS s WHERE s.ord = m.ord)) AS wrong,
        (SELECT count(*) FROM message_search AS s WHERE NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.ord = s.ord)) AS stale`);
    expect(Number(counts!.messages)).toBeGreaterThan(320);
    expect(Number(counts!.pending)).toBeGreaterThan(0);
    expect(Number(counts!.indexed)).toBe(Number(counts!.messages) - Number(counts!.pending));
    expect(Number(counts!.wrong)).toBe(0);
    expect(Number(counts!.stale)).toBe(0);
    const [last] = await sql.unsafe<Array<{ id: string; parts: string }>>(`
      SELECT m.id, m.parts FROM messages AS m
      WHERE m.role = 'user' AND ${searchableNow("m")} ORDER BY m.ord DESC LIMIT 1`);
    const number = /number (\d+)/.exec(last!.parts)![1]!;
    const backend = await openPostgresBackend(db.url);
    try {
      const hits = await backend.search.searchHistory({
        query: phrase(`number ${number}`),
        scope: { kind: "principal", principal: `telegram:u${Number(number) % 50}` },
        limit: 3,
      });
      expect(hits.map((h) => h.ref)).toContain(last!.id);
    } finally {
      await backend.close();
    }
  } finally {
    await sql.close();
    await db.drop();
  }
}, 60_000);
