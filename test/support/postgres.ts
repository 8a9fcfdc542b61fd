/**
 * A PostgreSQL server for tests: 127.0.0.1:5432 with trust auth by default (`.ci/run` makes sure
 * one runs), or SWITCHBOARD_TEST_POSTGRES_URL. Every test gets its own fresh database.
 */
import { randomBytes } from "node:crypto";
import { SQL } from "bun";

export const SERVER_URL =
  process.env.SWITCHBOARD_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** The server URL without its password, for messages. */
function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

let admin: SQL | null = null;

/** A connection to the server's maintenance database; fails with how to start PostgreSQL. */
export async function adminConnection(): Promise<SQL> {
  if (admin) return admin;
  const sql = new SQL(SERVER_URL, { connectionTimeout: 5, max: 2 });
  try {
    await sql`SELECT 1`;
  } catch (error) {
    await sql.close();
    throw new Error(
      `PostgreSQL is not reachable at ${redacted(SERVER_URL)} (${(error as Error).message}). ` +
        "These tests need a running server: start it (e.g. `sudo service postgresql start`, or " +
        "`docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15`), or point " +
        "SWITCHBOARD_TEST_POSTGRES_URL at one whose user may create databases.",
      { cause: error },
    );
  }
  admin = sql;
  return sql;
}

/** Closes the maintenance connection; call from the test file's afterAll. */
export async function closeAdminConnection(): Promise<void> {
  await admin?.close();
  admin = null;
}

/** A fresh, empty database on the test server; `drop` removes it even with connections open. */
export async function createDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const sql = await adminConnection();
  const name = `sb_test_${randomBytes(6).toString("hex")}`;
  await sql.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Runs `fn` against a fresh database and drops it afterwards. */
export async function withDatabase(fn: (url: string) => Promise<void>): Promise<void> {
  const db = await createDatabase();
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
