import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createScheduleService } from "../../schedules/service.ts";
import type { DispatchResult, ScheduleEvent } from "../../schedules/types.ts";
import { createSqliteScheduleRepository } from "../../src/store/sqlite/schedules.ts";
import { systemClock } from "../../src/util/clock.ts";
import { openTestDatabase } from "./support/db.ts";
import { recordingDispatch } from "./support/dispatcher.ts";
import { FakeTime, flush } from "./support/fake-time.ts";
import { CONVERSATION } from "./support/harness.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

const base = { ...CONVERSATION, createdBy: "user" as const, prompt: "water the plants" };

describe("leases across instances", () => {
  test("an expired lease is re-claimed by a second instance with a higher token; the first one's late settle is refused", async () => {
    const database = openTestDatabase();
    cleanups.push(() => database.close());
    const start = Date.parse("2026-06-01T10:00:00Z");
    const timeA = new FakeTime(start);
    const timeB = new FakeTime(start);

    let releaseA: ((result: DispatchResult) => void) | undefined;
    const dispatcherA = recordingDispatch(
      () =>
        new Promise<DispatchResult>((resolve) => {
          releaseA = resolve; // owner A "dies" mid-dispatch: it never answers in time
        }),
    );
    const eventsA: ScheduleEvent[] = [];
    const serviceA = createScheduleService({
      repository: createSqliteScheduleRepository(database.db),
      dispatch: dispatcherA.dispatch,
      clock: timeA,
      timer: timeA,
      owner: "owner-a",
      onEvent: (event) => eventsA.push(event),
    });
    const repositoryB = createSqliteScheduleRepository(database.connect());
    const dispatcherB = recordingDispatch(() => ({ status: "ok", runId: "run_from_b" }));
    const serviceB = createScheduleService({
      repository: repositoryB,
      dispatch: dispatcherB.dispatch,
      clock: timeB,
      timer: timeB,
      owner: "owner-b",
    });

    const created = await serviceA.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    const slot = start + MINUTE;
    await timeA.advanceTo(slot);
    const tickA = serviceA.tick(); // not started: driven by hand; stays pending while dispatch hangs
    await flush();
    expect(dispatcherA.requests).toHaveLength(1);
    expect(await repositoryB.getOccurrence(created.id, slot)).toMatchObject({
      state: "claimed",
      leaseOwner: "owner-a",
      fencingToken: 1,
      leaseExpiresAtMs: slot + MINUTE,
    });

    // B sees the slot but must leave it alone while A's lease lives.
    await timeB.advanceTo(slot + 59 * SECOND);
    await serviceB.tick();
    expect(dispatcherB.requests).toHaveLength(0);

    await timeB.advanceTo(slot + MINUTE);
    await serviceB.tick();
    expect(dispatcherB.requests).toHaveLength(1);
    expect(dispatcherB.requests[0]?.idempotencyKey).toBe(dispatcherA.requests[0]?.idempotencyKey);
    expect(dispatcherB.requests[0]?.lateByMs).toBe(MINUTE);
    const takenOver = await repositoryB.getOccurrence(created.id, slot);
    expect(takenOver).toMatchObject({
      state: "dispatched",
      leaseOwner: "owner-b",
      fencingToken: 2,
      attempts: 2,
      runId: "run_from_b",
    });

    // A wakes up and reports success for the slot it no longer owns.
    releaseA?.({ status: "ok", runId: "run_from_a" });
    await tickA;
    expect(eventsA).toContainEqual({
      type: "settle-refused",
      scheduleId: created.id,
      scheduledForMs: slot,
      fencingToken: 1,
    });
    expect(eventsA.some((e) => e.type === "dispatched")).toBe(false);
    expect(await repositoryB.getOccurrence(created.id, slot)).toMatchObject({
      runId: "run_from_b",
      fencingToken: 2,
    });
    expect(await repositoryB.get(created.id)).toMatchObject({ state: "completed" });
  });

  test("a claim made under an older version is refused", async () => {
    const database = openTestDatabase();
    cleanups.push(() => database.close());
    const time = new FakeTime(Date.parse("2026-06-01T08:00:00Z"));
    const repository = createSqliteScheduleRepository(database.db);
    const service = createScheduleService({
      repository,
      dispatch: recordingDispatch().dispatch,
      clock: time,
      timer: time,
    });
    const created = await service.create({
      ...base,
      when: { kind: "cron", expression: "0 9 * * *" },
      timezone: "UTC",
    });
    await time.advanceTo(Date.parse("2026-06-01T09:00:00Z"));
    const [listed] = await repository.listDue(time.now(), 10);
    expect(listed?.version).toBe(1);
    await service.edit(created.id, { prompt: "water the plants twice" });
    const claim = await repository.claimOccurrence({
      scheduleId: created.id,
      expectedVersion: 1,
      scheduledForMs: listed?.nextAtMs as number,
      owner: "stale-owner",
      nowMs: time.now(),
      leaseMs: MINUTE,
    });
    expect(claim).toEqual({ claimed: false, reason: "stale" });
  });

  test(
    "two scheduler processes on one database with real timers dispatch each occurrence once",
    async () => {
      const database = openTestDatabase();
      cleanups.push(() => database.close());
      const repository = createSqliteScheduleRepository(database.db);
      const startMs = Date.now();
      const firstAtMs = startMs + 1500;
      const creator = createScheduleService({
        repository,
        dispatch: recordingDispatch().dispatch,
        clock: systemClock,
        limits: { minIntervalMs: 1000, maxSchedulesPerConversation: 100 },
      });
      const oneOffs = [];
      for (let i = 0; i < 40; i++) {
        oneOffs.push(
          await creator.create({ ...base, when: { kind: "at", atMs: firstAtMs + (i % 4) * 100 } }),
        );
      }
      const recurring = [];
      for (let i = 0; i < 3; i++) {
        recurring.push(
          await creator.create({
            ...base,
            when: { kind: "interval", intervalMs: 1000, firstAtMs },
            timezone: "UTC",
          }),
        );
      }
      const stopAtMs = firstAtMs + 2700; // slots at +0, +1000, +2000
      const script = join(import.meta.dir, "support", "scheduler-process.ts");
      const processes = ["proc-a", "proc-b"].map((owner) =>
        Bun.spawn([process.execPath, script, database.file, owner, String(stopAtMs)], {
          stdout: "pipe",
          stderr: "pipe",
        }),
      );
      const outputs = await Promise.all(
        processes.map(async (child) => {
          const [stdout, stderr, code] = await Promise.all([
            new Response(child.stdout).text(),
            new Response(child.stderr).text(),
            child.exited,
          ]);
          if (code !== 0) throw new Error(`scheduler process exited with ${code}: ${stderr}`);
          return stdout
            .trim()
            .split("\n")
            .filter(Boolean)
            .map(
              (line) => JSON.parse(line) as { owner: string; key?: string; event?: string; detail?: string },
            );
        }),
      );
      const lines = outputs.flat();
      expect(lines.filter((line) => line.event)).toEqual([]);
      const keys = lines.map((line) => line.key as string);
      const counts = new Map<string, number>();
      for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
      expect([...counts.values()].filter((n) => n > 1)).toEqual([]);

      for (const schedule of oneOffs) {
        expect(counts.get(`schedule:${schedule.id}:${schedule.nextAtMs}`)).toBe(1);
      }
      for (const schedule of recurring) {
        const slots = [0, 1000, 2000].map((offset) => `schedule:${schedule.id}:${firstAtMs + offset}`);
        for (const slot of slots) expect(counts.get(slot)).toBe(1);
      }
      expect(keys).toHaveLength(40 + 3 * 3);
      for (const schedule of oneOffs) expect((await repository.get(schedule.id))?.state).toBe("completed");
    },
    { timeout: 15_000 },
  );
});
