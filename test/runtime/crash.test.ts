import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { tempDir } from "../support/runtime.ts";

const dir = tempDir("switchboard-crash-");
afterAll(() => dir.cleanup());

const worker = join(import.meta.dir, "fixtures", "crash-worker.ts");
const INPUTS = ["first question", "please use the tool", "third question", "fourth, use the tool", "fifth"];

interface Line {
  type: string;
  [key: string]: unknown;
}

function spawnWorker(dbPath: string, modelLog: string) {
  const child = Bun.spawn([process.execPath, worker, dbPath, modelLog, ...INPUTS], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: Line[] = [];
  const listeners: Array<() => void> = [];
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    const reader = child.stdout.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      buffered += decoder.decode(read.value);
      let nl = buffered.indexOf("\n");
      while (nl >= 0) {
        lines.push(JSON.parse(buffered.slice(0, nl)) as Line);
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf("\n");
        for (const l of listeners) l();
      }
    }
  })();
  const waitFor = (predicate: (lines: Line[]) => boolean, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out; saw ${JSON.stringify(lines)}`)), timeoutMs);
      const check = () => {
        if (predicate(lines)) {
          clearTimeout(timer);
          resolve();
        }
      };
      listeners.push(check);
      check();
    });
  return { child, lines, waitFor };
}

test("SIGKILL mid-stream: after restart no admitted input is lost, each gets exactly one answer, the dead owner is fenced out", async () => {
  const dbPath = join(dir.path, "crash.sqlite");
  const modelLog = join(dir.path, "model.log");

  const first = spawnWorker(dbPath, modelLog);
  // Kill once every input is admitted and a checkpoint exists, while answers are streaming.
  await first.waitFor(
    (ls) =>
      ls.filter((l) => l.type === "admitted").length === INPUTS.length &&
      ls.some((l) => l.type === "checkpoint"),
    20_000,
  );
  await Bun.sleep(60);
  first.child.kill("SIGKILL");
  await first.child.exited;
  expect(first.lines.some((l) => l.type === "done")).toBe(false);

  // Which runs were owned when the process died, and under which fence?
  const before = openSqliteStores(dbPath);
  const owned = before.db
    .query("SELECT id, fencing_token FROM runs WHERE state IN ('running', 'interrupt_requested')")
    .all() as Array<{ id: string; fencing_token: number }>;
  before.close();
  expect(owned.length).toBeGreaterThan(0);

  const second = spawnWorker(dbPath, modelLog);
  await second.waitFor((ls) => ls.some((l) => l.type === "done"), 30_000);
  await second.child.exited;

  const results = second.lines.filter((l) => l.type === "result");
  expect(results.length).toBe(INPUTS.length);
  for (const r of results) expect(r.state).toBe("completed");
  // Re-submitting the same inputs found the same runs: nothing admitted twice.
  const admitted = second.lines.filter((l) => l.type === "admitted");
  expect(admitted.every((l) => l.outcome === "duplicate")).toBe(true);
  expect(new Set(results.map((r) => r.runId)).size).toBe(INPUTS.length);

  const after = openSqliteStores(dbPath);
  try {
    const runs = after.db.query("SELECT id, state FROM runs").all() as Array<{ id: string; state: string }>;
    expect(runs.length).toBe(INPUTS.length);
    expect(runs.every((r) => r.state === "completed")).toBe(true);
    const terminalEvents = after.db
      .query("SELECT payload FROM events WHERE type = 'terminal'")
      .all() as Array<{
      payload: string;
    }>;
    const perRun = new Map<string, number>();
    for (const e of terminalEvents) {
      const runId = (JSON.parse(e.payload) as { runId: string }).runId;
      perRun.set(runId, (perRun.get(runId) ?? 0) + 1);
    }
    expect([...perRun.values()].every((n) => n === 1)).toBe(true);
    expect(perRun.size).toBe(INPUTS.length);

    // The dead owner's late writes are refused.
    for (const stale of owned) {
      await expect(
        after.runtime.checkpoint({
          fence: { runId: stale.id, fencingToken: stale.fencing_token },
          assistantParts: [{ type: "text", text: "zombie" }],
          step: {
            step: 9,
            model: "zombie",
            finishReason: "stop",
            usage: {},
            startedAtMs: 0,
            finishedAtMs: 0,
          },
          joinedInputIds: [],
          nowMs: Date.now(),
        }),
      ).rejects.toMatchObject({ code: "fence_lost" });
    }
    const answers = after.db.query("SELECT parts FROM messages WHERE role = 'assistant'").all() as Array<{
      parts: string;
    }>;
    expect(answers.some((a) => a.parts.includes("zombie"))).toBe(false);
  } finally {
    after.close();
  }
  const calls = readFileSync(modelLog, "utf8").trim().split("\n");
  expect(calls.length).toBeGreaterThanOrEqual(INPUTS.length);
}, 60_000);
