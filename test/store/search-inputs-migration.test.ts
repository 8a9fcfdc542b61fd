/**
 * The migration that moves an input's indexing to its run's end (SQLite's 20, PostgreSQL's 18),
 * on a database with runs in flight across it: inputs the earlier trigger indexed at admission
 * stay indexed, an edit reindexes them, and their run's end adds no second row (FTS5 would refuse
 * it); an input admitted after the upgrade waits for its run's end.
 */
import { expect, test } from "bun:test";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import { parseSearchQuery } from "../../src/search/query.ts";
import type { SearchStore } from "../../src/search/store.ts";
import { PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { createPostgresSearch } from "../../src/store/postgres/search.ts";
import { SqliteRuntimeStore } from "../../src/store/sqlite/runtime-store.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { admitRequest } from "./conformance.ts";
import { acrossPostgresUpgrade, acrossSqliteUpgrade } from "./support/upgrade.ts";

useTestServer();

const T0 = 1_700_000_000_000;
const MIGRATION = "search-inputs-at-run-end";
const context = { channel: "telegram", principal: { id: "1001" } };

async function refs(search: SearchStore, text: string): Promise<string[]> {
  const parsed = parseSearchQuery(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return (await search.searchHistory({ query: parsed.query, scope: { kind: "all" }, limit: 10 })).map(
    (h) => h.ref,
  );
}

/** Before the upgrade: one input whose run is running, one whose run is queued. */
async function inFlight(store: OperatorRuntimeStore) {
  const running = await store.admit(
    admitRequest("m1", "k1", { parts: [{ type: "text", text: "heron before upgrade" }], context }),
  );
  const acquired = await store.acquireRun({ runId: running.runId, owner: "w", nowMs: T0, leaseMs: 60_000 });
  const queued = await store.admit(
    admitRequest("m2", "k2", { parts: [{ type: "text", text: "crane before upgrade" }], context }),
  );
  return { running, fence: acquired!.fence, queued };
}

/** After the upgrade, on the same runs. */
async function across(
  store: OperatorRuntimeStore,
  search: SearchStore,
  { running, fence, queued }: Awaited<ReturnType<typeof inFlight>>,
  indexRows: (messageId: string) => Promise<number>,
) {
  // Indexed at admission by the earlier trigger: still found.
  expect((await refs(search, "upgrade")).sort()).toEqual(
    [running.inputMessageId, queued.inputMessageId].sort(),
  );
  await store.saveInputParts(fence, running.inputMessageId, [{ type: "text", text: "stork after edit" }]);
  expect(await refs(search, "stork")).toEqual([running.inputMessageId]);
  expect(await refs(search, "heron")).toEqual([]);
  await store.commitTerminal({
    fence,
    state: "completed",
    assistantParts: [{ type: "text", text: "ok" }],
    nowMs: T0,
  });
  expect(await store.requestStop(queued.runId, "interrupted", T0)).toMatchObject({ outcome: "ended" });
  expect(await indexRows(running.inputMessageId)).toBe(1);
  expect(await indexRows(queued.inputMessageId)).toBe(1);
  expect(await refs(search, "stork")).toEqual([running.inputMessageId]);
  expect(await refs(search, "crane")).toEqual([queued.inputMessageId]);

  const after = await store.admit(
    admitRequest("m3", "k3", { parts: [{ type: "text", text: "ibis after upgrade" }], context }),
  );
  expect(await refs(search, "ibis")).toEqual([]);
  expect(await indexRows(after.inputMessageId)).toBe(0);
  expect(await store.requestStop(after.runId, "interrupted", T0)).toMatchObject({ outcome: "ended" });
  expect(await refs(search, "ibis")).toEqual([after.inputMessageId]);
}

test("SQLite: inputs in flight across the upgrade are indexed once, edits included", async () => {
  await acrossSqliteUpgrade(
    "switchboard-search-inputs-",
    MIGRATION,
    (before) => inFlight(new SqliteRuntimeStore(before)),
    async (stores, runs) => {
      const rows = async (messageId: string) =>
        (
          stores.db
            .query(
              "SELECT count(*) AS n FROM message_search WHERE rowid = (SELECT ord FROM messages WHERE id = ?)",
            )
            .get(messageId) as { n: number }
        ).n;
      await across(stores.runtime, stores.search, runs, rows);
      stores.db.exec("INSERT INTO message_search (message_search) VALUES ('integrity-check')");
    },
  );
}, 60_000);

test("PostgreSQL: inputs in flight across the upgrade are indexed once, edits included", async () => {
  await acrossPostgresUpgrade(
    MIGRATION,
    async (sql) => {
      const store = new PostgresRuntimeStore(sql);
      return { store, runs: await inFlight(store) };
    },
    async (sql, { store, runs }) => {
      const rows = async (messageId: string) => {
        const [row] = await sql<Array<{ n: string }>>`
          SELECT count(*) AS n FROM message_search WHERE ord = (SELECT ord FROM messages WHERE id = ${messageId})`;
        return Number(row!.n);
      };
      await across(store, createPostgresSearch(sql), runs, rows);
    },
  );
}, 60_000);
