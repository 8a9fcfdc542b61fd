/**
 * A scheduler process dies holding a claim; a second process on the same database takes the slot
 * over when the lease expires. Both run the real service on the gateway's SQLite stores with a
 * dispatch that admits a run keyed by the occurrence (see support/admitting-scheduler.ts), so
 * "exactly once" is checked where it matters: one admission, one run.
 * Two live processes sharing due slots: lease.test.ts ("two scheduler processes on one database").
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createScheduleService } from "../../schedules/service.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { systemClock } from "../../src/util/clock.ts";
import { tempDir } from "../support/runtime.ts";

const SCRIPT = join(import.meta.dir, "support", "admitting-scheduler.ts");
const LEASE_MS = 1500;
const CONVERSATION = { conversationId: "conv_processes", replyTarget: "tg:7", channel: "telegram" as const };

interface LogLine {
  owner: string;
  key?: string;
  runId?: string;
  outcome?: string;
  lateByMs?: number;
  event?: string;
}

let cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
  cleanups = [];
});

function setUp() {
  const dir = tempDir("switchboard-sched-processes-");
  const dbFile = join(dir.path, "gateway.sqlite");
  const logFile = join(dir.path, "dispatches.jsonl");
  const stores = openSqliteStores(dbFile);
  cleanups.push(() => {
    stores.close();
    dir.cleanup();
  });
  const log = (): LogLine[] =>
    existsSync(logFile)
      ? readFileSync(logFile, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as LogLine)
      : [];
  return { dbFile, logFile, stores, log };
}

async function runScheduler(
  args: {
    dbFile: string;
    logFile: string;
    owner: string;
    maxMs: number;
    crashAfterAdmission?: boolean;
    takeOver?: boolean;
    leaseMs?: number;
  },
  env: Record<string, string> = {},
): Promise<{
  exitCode: number | null;
  signalCode: ReturnType<typeof Bun.spawn>["signalCode"];
  stderr: string;
}> {
  const child = Bun.spawn(
    [
      process.execPath,
      SCRIPT,
      args.dbFile,
      args.logFile,
      args.owner,
      String(args.leaseMs ?? LEASE_MS),
      String(args.maxMs),
      ...(args.crashAfterAdmission ? ["crash-after-admission"] : []),
      ...(args.takeOver ? ["take-over"] : []),
    ],
    { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "ignore", stderr: "pipe" },
  );
  const [stderr] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { exitCode: child.exitCode, signalCode: child.signalCode, stderr };
}

/** A one-off due at once, created the way /in would. */
async function createDueSchedule(stores: SqliteStores) {
  const service = createScheduleService({
    repository: stores.schedules,
    clock: systemClock,
    dispatch: async () => ({ status: "retry", reason: "this instance never dispatches" }),
  });
  return service.create({
    ...CONVERSATION,
    createdBy: "user",
    prompt: "water the plants",
    when: { kind: "after", delayMs: 1 },
  });
}

function admissionsFor(stores: SqliteStores, idempotencyKey: string) {
  return stores.db
    .query("SELECT run_id FROM messages WHERE conversation_id = ? AND idempotency_key = ?")
    .all(CONVERSATION.conversationId, idempotencyKey) as Array<{ run_id: string }>;
}

function runsIn(stores: SqliteStores) {
  return stores.db
    .query("SELECT id, state FROM runs WHERE conversation_id = ?")
    .all(CONVERSATION.conversationId) as Array<{ id: string; state: string }>;
}

describe("a scheduler process killed mid-occurrence", () => {
  test(
    "killed after admitting the run but before settling: the next process re-claims the slot and gets the same run",
    async () => {
      const { dbFile, logFile, stores, log } = setUp();
      const schedule = await createDueSchedule(stores);
      const slotMs = schedule.nextAtMs as number;
      const key = `schedule:${schedule.id}:${slotMs}`;

      const first = await runScheduler({
        dbFile,
        logFile,
        owner: "proc-a",
        maxMs: 5_000,
        crashAfterAdmission: true,
      });
      expect(first.signalCode).toBe("SIGKILL");
      const [admitted] = log();
      expect(admitted).toMatchObject({ owner: "proc-a", key, outcome: "admitted" });
      expect(await stores.schedules.getOccurrence(schedule.id, slotMs)).toMatchObject({
        state: "claimed",
        leaseOwner: "proc-a",
        fencingToken: 1,
        runId: null,
      });

      const second = await runScheduler({ dbFile, logFile, owner: "proc-b", maxMs: 3 * LEASE_MS + 2_000 });
      expect(second).toMatchObject({ exitCode: 0, signalCode: null });
      const fromB = log().filter((line) => line.owner === "proc-b");
      // The same key admitted again is a duplicate of A's admission: the same run, not a new one.
      expect(fromB).toEqual([
        { owner: "proc-b", key, runId: admitted!.runId, outcome: "duplicate", lateByMs: expect.any(Number) },
      ]);
      expect(fromB[0]!.lateByMs!).toBeGreaterThanOrEqual(LEASE_MS);
      expect(admissionsFor(stores, key)).toEqual([{ run_id: admitted!.runId! }]);
      expect(runsIn(stores)).toEqual([{ id: admitted!.runId!, state: "queued" }]);
      expect(await stores.schedules.getOccurrence(schedule.id, slotMs)).toMatchObject({
        state: "dispatched",
        leaseOwner: "proc-b",
        fencingToken: 2,
        attempts: 2,
        runId: admitted!.runId,
      });
      expect((await stores.schedules.get(schedule.id))?.state).toBe("completed");
    },
    { timeout: 20_000 },
  );

  test(
    "killed right after the claim (kill point schedule.claimed): the next process admits exactly one run",
    async () => {
      const { dbFile, logFile, stores, log } = setUp();
      const schedule = await createDueSchedule(stores);
      const slotMs = schedule.nextAtMs as number;
      const key = `schedule:${schedule.id}:${slotMs}`;

      const first = await runScheduler(
        { dbFile, logFile, owner: "proc-a", maxMs: 5_000 },
        { SWITCHBOARD_TEST_KILL_POINT: "schedule.claimed" },
      );
      expect(first.signalCode).toBe("SIGKILL");
      expect(first.stderr).toContain('"point":"schedule.claimed"');
      expect(log()).toEqual([]);
      expect(admissionsFor(stores, key)).toEqual([]);
      expect(await stores.schedules.getOccurrence(schedule.id, slotMs)).toMatchObject({
        state: "claimed",
        leaseOwner: "proc-a",
        fencingToken: 1,
      });

      const second = await runScheduler({ dbFile, logFile, owner: "proc-b", maxMs: 3 * LEASE_MS + 2_000 });
      expect(second).toMatchObject({ exitCode: 0, signalCode: null });
      const lines = log();
      expect(lines).toMatchObject([{ owner: "proc-b", key, outcome: "admitted" }]);
      const runId = lines[0]!.runId!;
      expect(admissionsFor(stores, key)).toEqual([{ run_id: runId }]);
      expect(runsIn(stores)).toEqual([{ id: runId, state: "queued" }]);
      expect(await stores.schedules.getOccurrence(schedule.id, slotMs)).toMatchObject({
        state: "dispatched",
        fencingToken: 2,
        runId,
      });
    },
    { timeout: 20_000 },
  );

  test(
    "a process that starts as the only one takes the dead claim over at once instead of waiting out its lease",
    async () => {
      const { dbFile, logFile, stores, log } = setUp();
      const schedule = await createDueSchedule(stores);
      const slotMs = schedule.nextAtMs as number;
      const longLeaseMs = 30_000;
      const first = await runScheduler(
        { dbFile, logFile, owner: "proc-a", maxMs: 5_000, leaseMs: longLeaseMs },
        { SWITCHBOARD_TEST_KILL_POINT: "schedule.claimed" },
      );
      expect(first.signalCode).toBe("SIGKILL");
      const before = await stores.schedules.getOccurrence(schedule.id, slotMs);
      expect(before).toMatchObject({ state: "claimed", leaseOwner: "proc-a" });
      expect(before!.leaseExpiresAtMs! - Date.now()).toBeGreaterThan(20_000);

      // Well inside proc-a's lease: without the takeover proc-b would find nothing due and exit.
      const second = await runScheduler({
        dbFile,
        logFile,
        owner: "proc-b",
        maxMs: 8_000,
        leaseMs: longLeaseMs,
        takeOver: true,
      });
      expect(second).toMatchObject({ exitCode: 0, signalCode: null });
      const lines = log();
      expect(lines).toMatchObject([{ owner: "proc-b", outcome: "admitted" }]);
      expect(lines[0]!.lateByMs!).toBeLessThan(longLeaseMs / 2);
      expect(await stores.schedules.getOccurrence(schedule.id, slotMs)).toMatchObject({
        state: "dispatched",
        leaseOwner: "proc-b",
        fencingToken: 2,
        runId: lines[0]!.runId,
      });
    },
    { timeout: 30_000 },
  );
});
