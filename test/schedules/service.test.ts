import { afterEach, describe, expect, test } from "bun:test";
import { isSwitchboardError, SwitchboardError } from "../../src/errors.ts";
import { totalChanges } from "./support/db.ts";
import { CONVERSATION, createHarness } from "./support/harness.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function harness(startIso: string, options: Parameters<typeof createHarness>[1] = {}) {
  const h = createHarness(startIso, options);
  cleanups.push(() => h.database.close());
  cleanups.push(() => h.service.stop());
  return h;
}

async function refusal(promise: Promise<unknown>): Promise<SwitchboardError> {
  try {
    await promise;
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw error;
  }
  throw new Error("expected a refusal, but the call succeeded");
}

const base = { ...CONVERSATION, createdBy: "user" as const, prompt: "summarise my inbox" };

describe("kinds", () => {
  test("after: fires once at now + delay with the slot's idempotency key, then completes", async () => {
    const { service, time, dispatcher, repository } = harness("2026-06-01T10:00:00Z");
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: 10 * MINUTE } });
    expect(created.kind).toBe("at");
    expect(created.nextAtMs).toBe(time.now() + 10 * MINUTE);

    await time.advance(10 * MINUTE - 1);
    expect(dispatcher.requests).toHaveLength(0);
    await time.advance(1);
    expect(dispatcher.requests).toHaveLength(1);
    const [request] = dispatcher.requests;
    const slot = Date.parse("2026-06-01T10:10:00Z");
    expect(request?.scheduledForMs).toBe(slot);
    expect(request?.occurrenceKey).toBe(`${created.id}:${slot}`);
    expect(request?.idempotencyKey).toBe(`schedule:${created.id}:${slot}`);
    expect(request?.lateByMs).toBe(0);
    expect(request?.signal.aborted).toBe(false);

    const after = await service.get(created.id);
    expect(after).toMatchObject({ state: "completed", nextAtMs: null, attempts: 0, lastFiredAtMs: slot });
    const occurrence = await repository.getOccurrence(created.id, slot);
    expect(occurrence).toMatchObject({ state: "dispatched", runId: "run_1", attempts: 1, fencingToken: 1 });
    await time.advance(24 * HOUR);
    expect(dispatcher.requests).toHaveLength(1);
  });

  test("at: fires at the instant; a past instant is refused", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    await service.start();
    const atMs = Date.parse("2026-06-02T07:30:00Z");
    const created = await service.create({ ...base, when: { kind: "at", atMs }, timezone: "Europe/Berlin" });
    expect(created.timezone).toBe("Europe/Berlin");
    await time.advanceTo(atMs);
    expect(dispatcher.slotsOf(created.id)).toEqual([atMs]);

    const past = await refusal(service.create({ ...base, when: { kind: "at", atMs: time.now() - HOUR } }));
    expect(past.code).toBe("input_invalid");
    expect(past.message).toContain("in the past");
  });

  test("every interval: slots are anchor + k × interval", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "interval", intervalMs: 15 * MINUTE },
      timezone: "UTC",
    });
    await time.advance(HOUR);
    const start = Date.parse("2026-06-01T10:00:00Z");
    expect(dispatcher.slotsOf(created.id)).toEqual([1, 2, 3, 4].map((k) => start + k * 15 * MINUTE));
    expect((await service.get(created.id))?.nextAtMs).toBe(start + 5 * 15 * MINUTE);
  });

  test("every cron: weekdays at 09:00 in the schedule's zone", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T00:00:00Z"); // a Monday
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "cron", expression: "0 9 * * 1-5" },
      timezone: "europe/berlin",
    });
    expect(created.timezone).toBe("Europe/Berlin");
    await time.advance(7 * 24 * HOUR);
    expect(dispatcher.slotsOf(created.id).map((ms) => new Date(ms).toISOString())).toEqual([
      "2026-06-01T07:00:00.000Z",
      "2026-06-02T07:00:00.000Z",
      "2026-06-03T07:00:00.000Z",
      "2026-06-04T07:00:00.000Z",
      "2026-06-05T07:00:00.000Z",
    ]);
  });
});

describe("refusals", () => {
  test("recurring schedules need a valid IANA zone, a valid cron and the minimum interval", async () => {
    const { service } = harness("2026-06-01T10:00:00Z", { limits: { minIntervalMs: 2 * MINUTE } });
    const noZone = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "0 9 * * *" } }),
    );
    expect(noZone.message).toContain("explicit IANA time zone");
    expect(noZone.details?.hint).toContain("/tz");

    const badZone = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "0 9 * * *" }, timezone: "Mars/Olympus" }),
    );
    expect(badZone.message).toContain('"Mars/Olympus" is not an IANA time zone');

    const badCron = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "61 9 * * *" }, timezone: "UTC" }),
    );
    expect(badCron.message).toContain("not a valid cron expression");
    expect(badCron.message).toContain("minute");

    const sixFields = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "0 0 9 * * *" }, timezone: "UTC" }),
    );
    expect(sixFields.message).toContain("5 fields");

    const tooOften = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "* * * * *" }, timezone: "UTC" }),
    );
    expect(tooOften.message).toContain("every 1m");
    expect(tooOften.message).toContain("at most once every 2m");

    const shortInterval = await refusal(
      service.create({ ...base, when: { kind: "interval", intervalMs: 30 * SECOND }, timezone: "UTC" }),
    );
    expect(shortInterval.details).toMatchObject({ gapMs: 30 * SECOND, minIntervalMs: 2 * MINUTE });

    const never = await refusal(
      service.create({ ...base, when: { kind: "cron", expression: "0 9 30 2 *" }, timezone: "UTC" }),
    );
    expect(never.message).toContain("never fires");

    const empty = await refusal(
      service.create({ ...base, prompt: "   ", when: { kind: "after", delayMs: 1000 } }),
    );
    expect(empty.message).toContain("prompt is empty");
  });

  test("the per-conversation limit counts active and paused schedules", async () => {
    const { service } = harness("2026-06-01T10:00:00Z", { limits: { maxSchedulesPerConversation: 2 } });
    const first = await service.create({ ...base, when: { kind: "after", delayMs: HOUR } });
    const second = await service.create({ ...base, when: { kind: "after", delayMs: HOUR } });
    await service.pause(second.id);
    const third = await refusal(service.create({ ...base, when: { kind: "after", delayMs: HOUR } }));
    expect(third.message).toBe("This chat already has 2 schedules, the limit is 2.");
    expect(third.details?.hint).toContain("/cancel");
    // Another conversation is not affected.
    await service.create({
      ...base,
      conversationId: "conv_2",
      chatKey: "telegram:1:dm:2",
      when: { kind: "after", delayMs: HOUR },
    });
    await service.cancel(first.id);
    await service.create({ ...base, when: { kind: "after", delayMs: HOUR } });
  });
});

describe("timer", () => {
  test("an idle service keeps one nearest-due timer, and neither polls nor writes", async () => {
    const h = harness("2026-06-01T10:00:00Z");
    let repositoryCalls = 0;
    const counted = new Proxy(h.repository, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          repositoryCalls += 1;
          return value.apply(target, args);
        };
      },
    });
    const { createScheduleService } = await import("../../schedules/service.ts");
    const service = createScheduleService({
      repository: counted,
      dispatch: h.dispatcher.dispatch,
      clock: h.time,
    });
    cleanups.push(() => service.stop());
    await service.start();
    expect(h.time.pendingAt()).toEqual([]);

    const later = await service.create({ ...base, when: { kind: "after", delayMs: 3 * HOUR } });
    await service.create({ ...base, when: { kind: "after", delayMs: 5 * HOUR } });
    expect(h.time.pendingAt()).toEqual([later.nextAtMs as number]);

    const callsBefore = repositoryCalls;
    const writesBefore = totalChanges(h.database.db);
    await h.time.advance(3 * HOUR - 1);
    expect(repositoryCalls).toBe(callsBefore);
    expect(totalChanges(h.database.db)).toBe(writesBefore);

    await h.time.advance(1);
    expect(h.dispatcher.requests).toHaveLength(1);
    expect(h.time.pendingAt()).toEqual([Date.parse("2026-06-01T15:00:00Z")]);
  });

  test("due selection is bounded and indexed: 40 due schedules take two ticks of at most 32", async () => {
    const { service, time, dispatcher, database } = harness("2026-06-01T10:00:00Z");
    for (let i = 0; i < 40; i++) {
      await service.create({
        ...base,
        conversationId: `conv_${i}`,
        chatKey: `telegram:1:dm:${i}`,
        when: { kind: "after", delayMs: MINUTE },
      });
    }
    await time.advance(MINUTE);
    await service.tick();
    expect(dispatcher.requests).toHaveLength(32);
    await service.tick();
    expect(dispatcher.requests).toHaveLength(40);
    expect(new Set(dispatcher.requests.map((r) => r.schedule.id)).size).toBe(40);
    const plan = database.db
      .query(
        "EXPLAIN QUERY PLAN SELECT * FROM schedules WHERE due_at_ms IS NOT NULL AND due_at_ms <= ? ORDER BY due_at_ms LIMIT ?",
      )
      .all(0, 32) as Array<{ detail: string }>;
    expect(plan.map((row) => row.detail).join(" ")).toContain("schedules_due");
  });
});

describe("retries", () => {
  test("a one-off retries with backoff 1, 2, 4, 8, 16, 32, 60 s… then fails after maxAttempts", async () => {
    const { service, time, dispatcher, events } = harness("2026-06-01T10:00:00Z");
    dispatcher.respondWith(() => ({ status: "retry", reason: "runtime is draining" }));
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await time.advance(MINUTE + 10 * MINUTE);

    const times = dispatcher.requests.map((r) => r.lateByMs / SECOND);
    expect(times).toEqual([0, 1, 3, 7, 15, 31, 63, 123, 183, 243]);
    expect(new Set(dispatcher.requests.map((r) => r.idempotencyKey)).size).toBe(1);
    const failed = await service.get(created.id);
    expect(failed).toMatchObject({ state: "failed", nextAtMs: null, retryAtMs: null });
    expect(failed?.lastError).toBe("gave up after 10 attempts: runtime is draining");
    expect(events.at(-1)).toMatchObject({ type: "occurrence-failed", attempt: 10, scheduleState: "failed" });
    const [occurrence] = await service.occurrences(created.id);
    expect(occurrence).toMatchObject({ state: "failed", attempts: 10, fencingToken: 10 });
  });

  test("retry state is persisted: while retrying the schedule shows attempts, retryAt and lastError", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    dispatcher.respondWith(() => {
      throw new Error("admission store locked");
    });
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await time.advance(MINUTE + 2 * SECOND);
    const retrying = await service.get(created.id);
    expect(retrying).toMatchObject({
      state: "active",
      attempts: 2,
      retryAtMs: Date.parse("2026-06-01T10:01:03Z"), // attempts at :00 and :01, then +2 s
      lastError: "admission store locked",
    });
    dispatcher.respondWith(() => ({ status: "ok", runId: "run_ok" }));
    await time.advance(3 * SECOND);
    expect(await service.get(created.id)).toMatchObject({
      state: "completed",
      attempts: 0,
      retryAtMs: null,
      lastError: null,
    });
  });

  test("a thrown SwitchboardError's retryAfterMs lengthens the delay", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    dispatcher.respondWith(() => {
      throw new SwitchboardError("platform_rate_limited", "slow down", {
        retryable: true,
        retryAfterMs: 20_000,
      });
    });
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await time.advance(MINUTE);
    expect((await service.get(created.id))?.retryAtMs).toBe(time.now() + 20_000);
  });

  test("a recurring schedule gives up one slot after maxAttempts and keeps its cadence; success resets", async () => {
    const { service, time, dispatcher, events } = harness("2026-06-01T10:00:00Z");
    const start = time.now();
    dispatcher.respondWith((request) =>
      request.scheduledForMs === start + 10 * MINUTE
        ? { status: "retry", reason: "model provider down" }
        : { status: "ok", runId: `run_${request.scheduledForMs}` },
    );
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "interval", intervalMs: 10 * MINUTE },
      timezone: "UTC",
      maxAttempts: 3,
    });
    await time.advance(10 * MINUTE + 10 * SECOND);
    expect(dispatcher.requests.map((r) => r.lateByMs)).toEqual([0, 1 * SECOND, 3 * SECOND]);
    const skipped = await service.get(created.id);
    expect(skipped).toMatchObject({
      state: "active",
      nextAtMs: start + 20 * MINUTE,
      attempts: 0,
      retryAtMs: null,
      lastError: "gave up after 3 attempts: model provider down",
    });
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "occurrence-failed",
        scheduleState: "active",
        nextAtMs: start + 20 * MINUTE,
      }),
    );

    await time.advance(10 * MINUTE);
    expect(dispatcher.slotsOf(created.id).at(-1)).toBe(start + 20 * MINUTE);
    expect(await service.get(created.id)).toMatchObject({
      attempts: 0,
      lastError: null,
      nextAtMs: start + 30 * MINUTE,
    });
  });

  test("terminal stops the whole schedule in failed state", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    dispatcher.respondWith(() => ({ status: "terminal", reason: "conversation was purged" }));
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "interval", intervalMs: 10 * MINUTE },
      timezone: "UTC",
    });
    await time.advance(HOUR);
    expect(dispatcher.requests).toHaveLength(1);
    expect(await service.get(created.id)).toMatchObject({
      state: "failed",
      nextAtMs: null,
      lastError: "dispatch refused the schedule for good: conversation was purged",
    });
  });

  test("a dispatch past its 30 s deadline is aborted and retried with the same key", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    let calls = 0;
    dispatcher.respondWith(
      (request) =>
        new Promise((resolve) => {
          calls += 1;
          if (calls > 1) return resolve({ status: "ok", runId: "run_late" });
          // Hangs until aborted, like a runtime that never answers.
          request.signal.addEventListener("abort", () => resolve({ status: "ok", runId: "ignored" }));
        }),
    );
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await time.advance(MINUTE + 30 * SECOND);
    const first = dispatcher.requests[0];
    if (!first) throw new Error("expected a first dispatch");
    expect(first.signal.aborted).toBe(true);
    expect((first.signal.reason as Error).message).toContain("30000 ms deadline");
    const retrying = await service.get(created.id);
    expect(retrying?.retryAtMs).toBe(time.now() + SECOND);
    await time.advance(SECOND);
    expect(dispatcher.requests.map((r) => r.idempotencyKey)).toEqual([
      first.idempotencyKey,
      first.idempotencyKey,
    ]);
    expect(await service.get(created.id)).toMatchObject({ state: "completed" });
    const [occurrence] = await service.occurrences(created.id);
    expect(occurrence).toMatchObject({ runId: "run_late", attempts: 2 });
  });
});

describe("missed slots after downtime", () => {
  async function downtime(missedPolicy: "once" | "skip") {
    const h = harness("2026-06-01T10:00:00Z");
    const start = h.time.now();
    await h.service.start();
    const created = await h.service.create({
      ...base,
      when: { kind: "interval", intervalMs: HOUR },
      timezone: "UTC",
      missedPolicy,
    });
    await h.time.advance(90 * MINUTE); // slot 11:00 fires
    await h.service.stop();
    await h.time.advance(2 * HOUR + 50 * MINUTE); // down through 12:00, 13:00, 14:00 → 14:20
    const { createScheduleService } = await import("../../schedules/service.ts");
    const restarted = createScheduleService({
      repository: h.repository,
      dispatch: h.dispatcher.dispatch,
      clock: h.time,
      owner: "owner-restarted",
      onEvent: (event) => h.events.push(event),
    });
    cleanups.push(() => restarted.stop());
    await restarted.start();
    return { ...h, start, created, restarted };
  }

  test("once: fires the first missed slot once, late, then the next future slot of the original cadence", async () => {
    const { dispatcher, time, start, created, restarted } = await downtime("once");
    const fired = dispatcher.requests.filter((r) => r.schedule.id === created.id);
    expect(fired.map((r) => r.scheduledForMs)).toEqual([start + HOUR, start + 2 * HOUR]);
    expect(fired[1]?.lateByMs).toBe(2 * HOUR + 20 * MINUTE);
    expect((await restarted.get(created.id))?.nextAtMs).toBe(start + 5 * HOUR); // 15:00, not 15:20
    const [occurrence] = await restarted.occurrences(created.id);
    expect(occurrence).toMatchObject({ scheduledForMs: start + 2 * HOUR, lateByMs: 2 * HOUR + 20 * MINUTE });
    await time.advance(40 * MINUTE);
    expect(dispatcher.slotsOf(created.id).at(-1)).toBe(start + 5 * HOUR);
  });

  test("skip: records the missed slot as skipped and continues at the next future slot", async () => {
    const { dispatcher, time, start, created, restarted, events } = await downtime("skip");
    expect(dispatcher.slotsOf(created.id)).toEqual([start + HOUR]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: "occurrence-skipped", scheduledForMs: start + 2 * HOUR }),
    );
    const [occurrence] = await restarted.occurrences(created.id);
    expect(occurrence).toMatchObject({ scheduledForMs: start + 2 * HOUR, state: "skipped", attempts: 0 });
    expect((await restarted.get(created.id))?.nextAtMs).toBe(start + 5 * HOUR);
    await time.advance(40 * MINUTE);
    expect(dispatcher.slotsOf(created.id)).toEqual([start + HOUR, start + 5 * HOUR]);
  });

  test("a one-off missed with skip completes without firing; with once it fires late", async () => {
    const { service, time, dispatcher, repository } = harness("2026-06-01T10:00:00Z");
    const skipOne = await service.create({
      ...base,
      when: { kind: "after", delayMs: HOUR },
      missedPolicy: "skip",
    });
    const onceOne = await service.create({ ...base, when: { kind: "after", delayMs: HOUR } });
    await time.advance(3 * HOUR); // the service was never started: downtime
    await service.start();
    expect(dispatcher.slotsOf(skipOne.id)).toEqual([]);
    expect(await service.get(skipOne.id)).toMatchObject({ state: "completed" });
    expect(await repository.getOccurrence(skipOne.id, skipOne.nextAtMs as number)).toMatchObject({
      state: "skipped",
    });
    expect(dispatcher.requests.find((r) => r.schedule.id === onceOne.id)?.lateByMs).toBe(2 * HOUR);
  });

  test("a slot late by less than the grace period fires under skip", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    const created = await service.create({
      ...base,
      when: { kind: "after", delayMs: HOUR },
      missedPolicy: "skip",
    });
    await time.advance(HOUR + 30 * SECOND);
    await service.start();
    expect(dispatcher.slotsOf(created.id)).toHaveLength(1);
  });
});

describe("pause, resume, cancel, edit", () => {
  test("a paused schedule does not fire; resume continues at the next future slot", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    const start = time.now();
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "interval", intervalMs: HOUR },
      timezone: "UTC",
    });
    const paused = await service.pause(created.id);
    expect(paused).toMatchObject({ state: "paused" });
    // A second pause (a double click, a retried request) is a no-op, not a refusal.
    expect(await service.pause(created.id)).toEqual(paused);
    expect(time.pendingAt()).toEqual([]);
    await time.advance(3 * HOUR + 10 * MINUTE);
    expect(dispatcher.requests).toHaveLength(0);
    const resumed = await service.resume(created.id);
    expect(resumed).toMatchObject({ state: "active", nextAtMs: start + 4 * HOUR });
    await time.advance(50 * MINUTE);
    expect(dispatcher.slotsOf(created.id)).toEqual([start + 4 * HOUR]);

    const again = await refusal(service.resume(created.id));
    expect(again.message).toBe(`Schedule ${created.id} is active; it cannot be resumed.`);
  });

  test("cancel: never fires again, cannot be resumed; unknown ids are not_found", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z");
    await service.start();
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    expect(await service.cancel(created.id)).toMatchObject({ state: "cancelled", nextAtMs: null });
    await time.advance(HOUR);
    expect(dispatcher.requests).toHaveLength(0);
    expect((await refusal(service.resume(created.id))).message).toContain("is cancelled");
    expect((await refusal(service.cancel("sch_missing"))).code).toBe("not_found");
    expect(await service.list(CONVERSATION.conversationId)).toEqual([]);
    expect(await service.list(CONVERSATION.conversationId, { includeEnded: true })).toHaveLength(1);
  });

  test("edit: a new expression bumps the version and the old one never fires again", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T06:00:00Z");
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "cron", expression: "0 9 * * *" },
      timezone: "UTC",
    });
    const edited = await service.edit(created.id, { when: { kind: "cron", expression: "30 10 * * *" } });
    expect(edited).toMatchObject({ version: 2, nextAtMs: Date.parse("2026-06-01T10:30:00Z") });
    expect(edited.kind === "every" && edited.spec).toEqual({ type: "cron", expression: "30 10 * * *" });
    await time.advance(2 * 24 * HOUR);
    expect(dispatcher.slotsOf(created.id).map((ms) => new Date(ms).toISOString())).toEqual([
      "2026-06-01T10:30:00.000Z",
      "2026-06-02T10:30:00.000Z",
    ]);
    expect(dispatcher.requests.every((r) => r.schedule.version === 2)).toBe(true);

    const stale = await refusal(service.edit(created.id, { prompt: "new", expectedVersion: 1 }));
    expect(stale.code).toBe("version_conflict");
  });

  test("edit during an in-flight dispatch: the old slot's retry is dropped, the new timing fires", async () => {
    const { service, time, dispatcher, repository } = harness("2026-06-01T08:59:00Z");
    let release: (() => void) | undefined;
    dispatcher.respondWith(
      (request) =>
        new Promise((resolve) => {
          if (request.schedule.version === 1) release = () => resolve({ status: "retry", reason: "busy" });
          else resolve({ status: "ok", runId: "run_v2" });
        }),
    );
    await service.start();
    const created = await service.create({
      ...base,
      when: { kind: "cron", expression: "0 9 * * *" },
      timezone: "UTC",
    });
    await time.advance(MINUTE);
    expect(release).toBeDefined();
    await service.edit(created.id, { when: { kind: "cron", expression: "0 12 * * *" } });
    release?.();
    await time.advance(4 * HOUR);
    const oldSlot = Date.parse("2026-06-01T09:00:00Z");
    expect(await repository.getOccurrence(created.id, oldSlot)).toMatchObject({ state: "skipped" });
    expect(dispatcher.slotsOf(created.id)).toEqual([oldSlot, Date.parse("2026-06-01T12:00:00Z")]);
  });
});

describe("DST through the service", () => {
  test("30 2 * * * in Europe/Berlin fires at 03:00 on the spring gap and once on the repeat", async () => {
    const { service, time, dispatcher } = harness("2026-03-28T00:00:00Z");
    await service.start();
    const spring = await service.create({
      ...base,
      when: { kind: "cron", expression: "30 2 * * *" },
      timezone: "Europe/Berlin",
    });
    await time.advanceTo(Date.parse("2026-03-31T00:00:00Z"));
    expect(dispatcher.slotsOf(spring.id).map((ms) => new Date(ms).toISOString())).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
    await service.cancel(spring.id);

    await time.advanceTo(Date.parse("2026-10-24T12:00:00Z"));
    const autumn = await service.create({
      ...base,
      when: { kind: "cron", expression: "30 2 * * *" },
      timezone: "Europe/Berlin",
    });
    await time.advanceTo(Date.parse("2026-10-27T00:00:00Z"));
    expect(dispatcher.slotsOf(autumn.id).map((ms) => new Date(ms).toISOString())).toEqual([
      "2026-10-25T00:30:00.000Z", // first 02:30 (CEST); the repeated 02:30 CET does not fire
      "2026-10-26T01:30:00.000Z",
    ]);
  });
});

describe("lifecycle and storage failures", () => {
  test("stop() aborts a dispatch in flight; the slot is retried after a restart with the same key", async () => {
    const h = harness("2026-06-01T10:00:00Z");
    h.dispatcher.respondWith(
      (request) =>
        new Promise((resolve) => {
          request.signal.addEventListener("abort", () => resolve({ status: "ok", runId: "too-late" }));
        }),
    );
    await h.service.start();
    const created = await h.service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await h.time.advance(MINUTE);
    expect(h.dispatcher.requests).toHaveLength(1);
    await h.service.stop();
    expect(h.dispatcher.requests[0]?.signal.aborted).toBe(true);
    expect(h.time.pendingAt()).toEqual([]);
    const stopped = await h.service.get(created.id);
    expect(stopped).toMatchObject({ state: "active", attempts: 1, retryAtMs: h.time.now() + SECOND });
    expect(stopped?.lastError).toContain("The scheduler stopped during dispatch.");

    h.dispatcher.respondWith(() => ({ status: "ok", runId: "run_after_restart" }));
    await h.time.advance(10 * SECOND);
    await h.service.start();
    expect(h.dispatcher.requests.map((r) => r.idempotencyKey)).toEqual([
      `schedule:${created.id}:${created.nextAtMs}`,
      `schedule:${created.id}:${created.nextAtMs}`,
    ]);
    expect(await h.service.get(created.id)).toMatchObject({ state: "completed" });
  });

  test("a storage failure is reported and the tick is retried after the recovery delay", async () => {
    const h = harness("2026-06-01T10:00:00Z");
    let failures = 0;
    const flaky = new Proxy(h.repository, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== "listDue" || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (failures-- > 0) return Promise.reject(new Error("SQLITE_BUSY: database is locked"));
          return value.apply(target, args);
        };
      },
    });
    const { createScheduleService } = await import("../../schedules/service.ts");
    const service = createScheduleService({
      repository: flaky,
      dispatch: h.dispatcher.dispatch,
      clock: h.time,
      storeRecoveryMs: 5 * SECOND,
      onEvent: (event) => h.events.push(event),
    });
    cleanups.push(() => service.stop());
    const created = await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await service.start();
    failures = 1; // the read at the due time fails once
    await h.time.advance(MINUTE);
    expect(h.events).toContainEqual(expect.objectContaining({ type: "store-error", retryInMs: 5 * SECOND }));
    expect(h.dispatcher.requests).toHaveLength(0);
    await h.time.advance(5 * SECOND);
    expect(h.dispatcher.slotsOf(created.id)).toEqual([created.nextAtMs as number]);
  });

  test("a persistent per-schedule fault is retried at the recovery pace, not in a tight loop", async () => {
    const h = harness("2026-06-01T10:00:00Z");
    const broken = new Proxy(h.repository, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== "claimOccurrence") return value;
        return () => Promise.reject(new Error("disk I/O error"));
      },
    });
    const { createScheduleService } = await import("../../schedules/service.ts");
    const service = createScheduleService({
      repository: broken,
      dispatch: h.dispatcher.dispatch,
      clock: h.time,
      storeRecoveryMs: 5 * SECOND,
      onEvent: (event) => h.events.push(event),
    });
    cleanups.push(() => service.stop());
    await service.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
    await service.start();
    await h.time.advance(MINUTE + 30 * SECOND);
    expect(h.events.filter((e) => e.type === "store-error")).toHaveLength(7); // at 0, 5, …, 30 s
  });

  test("a started service works through more due schedules than one batch without help", async () => {
    const { service, time, dispatcher } = harness("2026-06-01T10:00:00Z", { batchLimit: 8 });
    await service.start();
    for (let i = 0; i < 20; i++) {
      await service.create({
        ...base,
        conversationId: `conv_${i}`,
        when: { kind: "after", delayMs: MINUTE },
      });
    }
    await time.advance(MINUTE);
    expect(dispatcher.requests).toHaveLength(20);
  });
});

describe("unit mistakes", () => {
  test("times more than ten years ahead are refused with a hint about units", async () => {
    const { service } = harness("2026-06-01T10:00:00Z");
    const far = await refusal(
      service.create({ ...base, when: { kind: "after", delayMs: 600 * 365 * 86_400_000 } }),
    );
    expect(far.message).toContain("more than ten years ahead");
    expect(far.details?.hint).toContain("seconds");
  });
});
