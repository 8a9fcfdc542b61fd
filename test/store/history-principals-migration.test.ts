/**
 * The migration that gives a named account's users principals of their own in history search
 * (SQLite's "history-account-principals", PostgreSQL's too), on a database from before it: a
 * conversation with the `default` account stays `<channel>:<user>`, one with a named account is
 * mapped again to `<channel>:<account>:<user>`, and runs admitted after the upgrade follow suit.
 */
import { expect, test } from "bun:test";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import { PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { SqliteRuntimeStore } from "../../src/store/sqlite/runtime-store.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { admitRequest } from "./conformance.ts";
import { acrossPostgresUpgrade, acrossSqliteUpgrade } from "./support/upgrade.ts";

useTestServer();

const MIGRATION = "history-account-principals";

/** Admits a message of Telegram user 42 into `conversationId`, through `accountName` when given. */
const admit = (store: OperatorRuntimeStore, conversationId: string, accountName?: string) =>
  store.admit(
    admitRequest(conversationId, `k-${conversationId}`, {
      context: {
        channel: "telegram",
        surface: "dm",
        principal: { id: "42" },
        ...(accountName === undefined ? {} : { accountName }),
      },
    }),
  );

async function before(store: OperatorRuntimeStore): Promise<void> {
  await admit(store, "default-old");
  await admit(store, "support-old", "support");
}

/** After the upgrade: `principals` reads conversation_principals as `conversation → principals`. */
async function after(store: OperatorRuntimeStore, principals: () => Promise<Record<string, string[]>>) {
  await admit(store, "default-new");
  await admit(store, "support-new", "support");
  expect(await principals()).toEqual({
    "default-new": ["telegram:42"],
    "default-old": ["telegram:42"],
    "support-new": ["telegram:support:42"],
    "support-old": ["telegram:support:42"],
  });
}

const grouped = (rows: { principal: string; conversation_id: string }[]) => {
  const out: Record<string, string[]> = {};
  for (const row of rows) out[row.conversation_id] = [...(out[row.conversation_id] ?? []), row.principal];
  return out;
};

const SELECT =
  "SELECT principal, conversation_id FROM conversation_principals ORDER BY conversation_id, principal";

test("SQLite: a named account's conversations are mapped to its own principal, the default account's stay", async () => {
  await acrossSqliteUpgrade(
    "switchboard-history-principals-",
    MIGRATION,
    (old) => before(new SqliteRuntimeStore(old)),
    (stores) =>
      after(stores.runtime, async () =>
        grouped(stores.db.query<{ principal: string; conversation_id: string }, []>(SELECT).all()),
      ),
  );
}, 60_000);

test("PostgreSQL: a named account's conversations are mapped to its own principal, the default account's stay", async () => {
  await acrossPostgresUpgrade(
    MIGRATION,
    (sql) => before(new PostgresRuntimeStore(sql)),
    (sql) => after(new PostgresRuntimeStore(sql), async () => grouped(await sql.unsafe(SELECT))),
  );
}, 60_000);
