/**
 * The contract every ScheduleRepository backend must honour. Run it against a backend with
 * `runScheduleRepositoryConformance(name, open)`; `open` returns a fresh, empty repository.
 */
import { describe, expect, test } from "bun:test";
import { createScheduleService } from "../../schedules/service.ts";
import {
  type DispatchResult,
  type OccurrenceClaim,
  SCHEDULE_STATES,
  type Schedule,
  type ScheduleEvent,
  type ScheduleRepository,
} from "../../schedules/types.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { recordingDispatch } from "./support/dispatcher.ts";
import { CONVERSATION } from "./support/harness.ts";
import { waitUntil } from "./support/wait.ts";

export const T0 = Date.parse("2026-06-01T10:00:00Z");
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export interface OpenedScheduleRepository {
  repo: ScheduleRepository;
  /** Another repository on the same database, as a second process would open it; close() ends it too. */
  connect(): Promise<ScheduleRepository>;
  close(): Promise<void>;
}

export function oneOff(id: string, atMs: number, conversationId = "conv_1"): Schedule {
  return {
    id,
    conversationId,
    chatKey: null,
    replyTarget: "tg:1",
    channel: "telegram",
    createdBy: "operator",
    prompt: "p",
    kind: "at",
    spec: { type: "at", atMs },
    timezone: null,
    missedPolicy: "once",
    maxAttempts: 10,
    state: "active",
    nextAtMs: atMs,
    attempts: 0,
    retryAtMs: null,
    lastError: null,
    lastFiredAtMs: null,
    version: 1,
    createdAtMs: T0,
    updatedAtMs: T0,
  };
}

/** Hourly from `firstAtMs`. */
function hourly(id: string, firstAtMs: number): Schedule {
  return {
    ...oneOff(id, firstAtMs),
    kind: "every",
    spec: { type: "interval", intervalMs: HOUR, anchorMs: firstAtMs },
    timezone: "UTC",
  };
}

const claimOf = (scheduleId: string, scheduledForMs: number, owner: string, nowMs: number, version = 1) => ({
  scheduleId,
  expectedVersion: version,
  scheduledForMs,
  owner,
  nowMs,
  leaseMs: MINUTE,
});

async function claimed(
  repo: ScheduleRepository,
  request: ReturnType<typeof claimOf>,
): Promise<{ claim: OccurrenceClaim; schedule: Schedule }> {
  const result = await repo.claimOccurrence(request);
  if (!result.claimed) throw new Error(`expected a claim of ${request.scheduleId}, got ${result.reason}`);
  return result;
}

/** A schedule whose slot T0 failed once and is retried at T0 + 1 min. */
async function retrying(repo: ScheduleRepository, id: string): Promise<void> {
  await repo.insert(hourly(id, T0), 20);
  const { claim } = await claimed(repo, claimOf(id, T0, "me", T0));
  await repo.settleOccurrence(
    claim,
    { outcome: "retry", error: "boom", retryAtMs: T0 + MINUTE },
    T0 + SECOND,
  );
}

const base = { ...CONVERSATION, createdBy: "user" as const, prompt: "water the plants" };

export function runScheduleRepositoryConformance(
  name: string,
  open: () => Promise<OpenedScheduleRepository>,
) {
  describe(`ScheduleRepository conformance: ${name}`, () => {
    const withRepository = (fn: (opened: OpenedScheduleRepository) => Promise<void>) => async () => {
      const opened = await open();
      try {
        await fn(opened);
      } finally {
        await opened.close();
      }
    };

    test(
      "round-trips every timing shape; due selection is ordered, bounded and skips paused rows",
      withRepository(async ({ repo }) => {
        await repo.insert(oneOff("a", T0 + 3000), 20);
        await repo.insert(oneOff("b", T0 + 1000), 20);
        await repo.insert(
          {
            ...oneOff("c", T0 + 2000),
            kind: "every",
            spec: { type: "interval", intervalMs: 60_000, anchorMs: T0 + 2000 },
            timezone: "UTC",
          },
          20,
        );
        await repo.insert(
          {
            ...oneOff("d", T0 + 500),
            kind: "every",
            spec: { type: "cron", expression: "0 9 * * *" },
            timezone: "UTC",
          },
          20,
        );
        await repo.pause("d", T0);
        expect(await repo.get("c")).toMatchObject({
          kind: "every",
          spec: { type: "interval", intervalMs: 60_000, anchorMs: T0 + 2000 },
        });
        expect(await repo.get("d")).toMatchObject({ state: "paused", spec: { expression: "0 9 * * *" } });
        expect(await repo.nextDueAtMs()).toBe(T0 + 1000);
        expect((await repo.listDue(T0 + 5000, 2)).map((s) => s.id)).toEqual(["b", "c"]);
        expect(await repo.listDue(T0, 10)).toEqual([]);
        expect(await repo.get("missing")).toBeNull();
        expect(await repo.get("a")).toEqual(oneOff("a", T0 + 3000));
      }),
    );

    test(
      "an inserted schedule keeps its state: a retry is due at its retry time, a paused one is not due",
      withRepository(async ({ repo }) => {
        expect(await repo.nextDueAtMs()).toBeNull();
        const retried = { ...oneOff("r", T0), attempts: 2, retryAtMs: T0 + MINUTE, lastError: "busy" };
        await repo.insert(retried, 20);
        await repo.insert({ ...oneOff("p", T0 - HOUR), state: "paused" }, 20);
        expect(await repo.get("r")).toEqual(retried);
        expect(await repo.nextDueAtMs()).toBe(T0 + MINUTE);
        expect((await repo.listDue(T0 + HOUR, 10)).map((s) => s.id)).toEqual(["r"]);
      }),
    );

    test(
      "the per-conversation limit is checked in the inserting transaction",
      withRepository(async ({ repo }) => {
        expect(await repo.insert(oneOff("a", T0), 2)).toEqual({ inserted: true });
        expect(await repo.insert(oneOff("b", T0), 2)).toEqual({ inserted: true });
        expect(await repo.insert(oneOff("c", T0), 2)).toEqual({ inserted: false, liveCount: 2 });
        expect(await repo.insert(oneOff("d", T0, "conv_2"), 2)).toEqual({ inserted: true });
        expect(await repo.get("c")).toBeNull();
        // Paused schedules count; ended ones do not.
        await repo.pause("a", T0);
        expect(await repo.insert(oneOff("c", T0), 2)).toEqual({ inserted: false, liveCount: 2 });
        await repo.cancel("a", T0);
        expect(await repo.insert(oneOff("c", T0), 2)).toEqual({ inserted: true });
      }),
    );

    test(
      "a chat's schedules are listed and limited across its conversations (/new)",
      withRepository(async ({ repo }) => {
        const inChat = (id: string, conversationId: string, chatKey: string): Schedule => ({
          ...oneOff(id, T0, conversationId),
          chatKey,
        });
        expect(await repo.insert(inChat("a", "conv_old", "tg:dm:42"), 2)).toEqual({ inserted: true });
        // After /new the chat has a new conversation; its schedules still count and list.
        expect(await repo.insert(inChat("b", "conv_new", "tg:dm:42"), 2)).toEqual({ inserted: true });
        expect(await repo.insert(inChat("c", "conv_newer", "tg:dm:42"), 2)).toEqual({
          inserted: false,
          liveCount: 2,
        });
        expect(await repo.insert(inChat("d", "conv_x", "tg:dm:7"), 2)).toEqual({ inserted: true });
        const listed = await repo.listByChat("tg:dm:42", SCHEDULE_STATES);
        expect(listed.map((s) => [s.id, s.conversationId, s.chatKey])).toEqual([
          ["a", "conv_old", "tg:dm:42"],
          ["b", "conv_new", "tg:dm:42"],
        ]);
        expect((await repo.listByConversation("conv_old", SCHEDULE_STATES)).map((s) => s.id)).toEqual(["a"]);
        await repo.cancel("a", T0);
        expect((await repo.listByChat("tg:dm:42", ["active", "paused"])).map((s) => s.id)).toEqual(["b"]);
        expect(await repo.listByChat("tg:dm:none", SCHEDULE_STATES)).toEqual([]);
      }),
    );

    test(
      "a settle needs the claim's owner and token",
      withRepository(async ({ repo }) => {
        await repo.insert(oneOff("a", T0), 20);
        const result = await repo.claimOccurrence({
          scheduleId: "a",
          expectedVersion: 1,
          scheduledForMs: T0,
          owner: "me",
          nowMs: T0,
          leaseMs: 60_000,
        });
        if (!result.claimed) throw new Error("expected a claim");
        const second = await repo.claimOccurrence({
          scheduleId: "a",
          expectedVersion: 1,
          scheduledForMs: T0,
          owner: "other",
          nowMs: T0 + 1,
          leaseMs: 60_000,
        });
        expect(second).toEqual({ claimed: false, reason: "stale" }); // not due: the lease pushed it out
        const settlement = {
          outcome: "dispatched" as const,
          runId: "r",
          advance: { state: "completed" as const },
        };
        expect(
          await repo.settleOccurrence({ ...result.claim, owner: "impostor" }, settlement, T0 + 2),
        ).toEqual({
          settled: false,
          reason: "fence_lost",
        });
        expect(
          await repo.settleOccurrence({ ...result.claim, fencingToken: 0 }, settlement, T0 + 2),
        ).toMatchObject({ settled: false });
        expect(await repo.settleOccurrence(result.claim, settlement, T0 + 2)).toMatchObject({
          settled: true,
          schedule: { state: "completed", lastFiredAtMs: T0 + 2 },
        });
        expect(await repo.settleOccurrence(result.claim, settlement, T0 + 3)).toEqual({
          settled: false,
          reason: "fence_lost",
        });
      }),
    );

    test(
      "a claim moves the due time to its lease; a live lease answers leased, a final outcome settled",
      withRepository(async ({ repo }) => {
        await repo.insert(oneOff("a", T0), 20);
        const first = await claimed(repo, claimOf("a", T0, "me", T0));
        expect(first.claim).toEqual({
          scheduleId: "a",
          scheduleVersion: 1,
          scheduledForMs: T0,
          owner: "me",
          fencingToken: 1,
          attempt: 1,
          leaseExpiresAtMs: T0 + MINUTE,
        });
        expect(first.schedule).toMatchObject({ attempts: 1, nextAtMs: T0, state: "active" });
        expect(await repo.nextDueAtMs()).toBe(T0 + MINUTE);
        expect(await repo.getOccurrence("a", T0)).toMatchObject({
          scheduleVersion: 1,
          state: "claimed",
          attempts: 1,
          lateByMs: 0,
          runId: null,
          leaseOwner: "me",
          leaseExpiresAtMs: T0 + MINUTE,
          fencingToken: 1,
          createdAtMs: T0,
        });

        // An edit that keeps the slot makes it due at once; the live lease sends the claim away.
        const edited = await repo.edit("a", 1, { prompt: "p2", nextAtMs: T0 }, T0 + SECOND);
        expect(edited).toMatchObject({ version: 2, prompt: "p2", attempts: 1, nextAtMs: T0 });
        expect(await repo.nextDueAtMs()).toBe(T0);
        expect(await repo.claimOccurrence(claimOf("a", T0, "other", T0 + 2 * SECOND, 2))).toEqual({
          claimed: false,
          reason: "leased",
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + MINUTE);

        // The old version's outcome is recorded; the slot stays due for the new timing to advance.
        const settled = await repo.settleOccurrence(
          first.claim,
          { outcome: "dispatched", runId: "run_1", advance: { state: "completed" } },
          T0 + 3 * SECOND,
        );
        expect(settled).toMatchObject({
          settled: true,
          schedule: { state: "active", nextAtMs: T0, lastFiredAtMs: T0 + 3 * SECOND, version: 2 },
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + 3 * SECOND);
        expect(await repo.getOccurrence("a", T0)).toMatchObject({
          state: "dispatched",
          runId: "run_1",
          leaseExpiresAtMs: null,
          lastError: null,
          updatedAtMs: T0 + 3 * SECOND,
        });
        expect(await repo.claimOccurrence(claimOf("a", T0, "other", T0 + 4 * SECOND, 2))).toEqual({
          claimed: false,
          reason: "settled",
        });
        const skipped = await repo.skipOccurrence({
          scheduleId: "a",
          expectedVersion: 2,
          scheduledForMs: T0,
          reason: "slot already has a final outcome",
          advance: { state: "completed" },
          nowMs: T0 + 5 * SECOND,
        });
        expect(skipped).toMatchObject({ state: "completed", nextAtMs: null, attempts: 0 });
        expect(await repo.nextDueAtMs()).toBeNull();
        expect(await repo.getOccurrence("a", T0)).toMatchObject({ state: "dispatched", runId: "run_1" });
      }),
    );

    test(
      "a retry keeps its slot and its retry time through pause and resume",
      withRepository(async ({ repo }) => {
        await repo.insert(hourly("r", T0), 20);
        const first = await claimed(repo, claimOf("r", T0, "me", T0 + 5 * SECOND));
        const retried = await repo.settleOccurrence(
          first.claim,
          { outcome: "retry", error: "boom", retryAtMs: T0 + MINUTE },
          T0 + 6 * SECOND,
        );
        expect(retried).toMatchObject({
          settled: true,
          schedule: { nextAtMs: T0, attempts: 1, retryAtMs: T0 + MINUTE, lastError: "boom" },
        });
        expect(await repo.getOccurrence("r", T0)).toMatchObject({
          state: "retrying",
          lastError: "boom",
          leaseExpiresAtMs: null,
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + MINUTE);
        expect(await repo.claimOccurrence(claimOf("r", T0, "me", T0 + 7 * SECOND))).toEqual({
          claimed: false,
          reason: "stale",
        });

        expect(await repo.pause("r", T0 + 8 * SECOND)).toMatchObject({
          state: "paused",
          retryAtMs: T0 + MINUTE,
        });
        expect(await repo.nextDueAtMs()).toBeNull();
        expect(await repo.listDue(T0 + 10 * HOUR, 10)).toEqual([]);
        expect(await repo.resume("r", T0, T0 + 9 * SECOND)).toMatchObject({
          state: "active",
          nextAtMs: T0,
          attempts: 1,
          retryAtMs: T0 + MINUTE,
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + MINUTE);

        const second = await claimed(repo, claimOf("r", T0, "me", T0 + MINUTE));
        expect(second.claim).toMatchObject({ attempt: 2, fencingToken: 2 });
        // The first attempt's lateness and the last error stay with the slot.
        expect(await repo.getOccurrence("r", T0)).toMatchObject({
          state: "claimed",
          attempts: 2,
          lateByMs: 5 * SECOND,
          lastError: "boom",
          createdAtMs: T0 + 5 * SECOND,
        });
        const done = await repo.settleOccurrence(
          second.claim,
          { outcome: "dispatched", runId: "run_r", advance: { state: "active", nextAtMs: T0 + HOUR } },
          T0 + MINUTE + SECOND,
        );
        expect(done).toMatchObject({
          settled: true,
          schedule: {
            state: "active",
            nextAtMs: T0 + HOUR,
            attempts: 0,
            retryAtMs: null,
            lastError: null,
            lastFiredAtMs: T0 + MINUTE + SECOND,
          },
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + HOUR);
        expect(await repo.getOccurrence("r", T0)).toMatchObject({
          state: "dispatched",
          runId: "run_r",
          lastError: null,
        });
      }),
    );

    test(
      "leaving a slot ends its retry: a resume at a later slot, an edit to another slot, a cancel",
      withRepository(async ({ repo }) => {
        for (const id of ["p", "e", "c"]) await retrying(repo, id);
        const now = T0 + 2 * SECOND;

        await repo.pause("p", now);
        expect(await repo.resume("p", T0 + HOUR, now)).toMatchObject({
          state: "active",
          nextAtMs: T0 + HOUR,
          attempts: 0,
          retryAtMs: null,
        });
        expect(await repo.getOccurrence("p", T0)).toMatchObject({
          state: "skipped",
          lastError: "not retried: the schedule was paused and resumed at a later slot",
          updatedAtMs: now,
        });

        const timing = {
          kind: "every" as const,
          spec: { type: "interval" as const, intervalMs: 2 * HOUR, anchorMs: T0 + 2 * HOUR },
          timezone: "Europe/Berlin",
        };
        expect(await repo.edit("e", 1, { timing, nextAtMs: T0 + 2 * HOUR }, now)).toMatchObject({
          ...timing,
          version: 2,
          nextAtMs: T0 + 2 * HOUR,
          attempts: 0,
          retryAtMs: null,
          lastError: null,
        });
        expect(await repo.getOccurrence("e", T0)).toMatchObject({
          state: "skipped",
          lastError: "not retried: the schedule was edited",
        });

        expect(await repo.cancel("c", now)).toMatchObject({
          state: "cancelled",
          nextAtMs: null,
          retryAtMs: null,
          updatedAtMs: now,
        });
        expect(await repo.getOccurrence("c", T0)).toMatchObject({
          state: "skipped",
          lastError: "not retried: the schedule was cancelled",
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + HOUR);
      }),
    );

    test(
      "an outcome settled after its schedule moved on is recorded; a retry of it becomes skipped",
      withRepository(async ({ repo }) => {
        for (const id of ["cancelled", "moved", "fired"]) await repo.insert(oneOff(id, T0), 20);
        const claims = new Map<string, OccurrenceClaim>();
        for (const id of ["cancelled", "moved", "fired"]) {
          claims.set(id, (await claimed(repo, claimOf(id, T0, "me", T0))).claim);
        }
        await repo.cancel("cancelled", T0 + SECOND);
        await repo.cancel("fired", T0 + SECOND);
        const later = { kind: "at" as const, spec: { type: "at" as const, atMs: T0 + HOUR }, timezone: null };
        await repo.edit("moved", 1, { timing: later, nextAtMs: T0 + HOUR }, T0 + SECOND);
        const retry = { outcome: "retry" as const, error: "busy", retryAtMs: T0 + MINUTE };

        expect(await repo.settleOccurrence(claims.get("cancelled")!, retry, T0 + 2 * SECOND)).toMatchObject({
          settled: true,
          schedule: { state: "cancelled", retryAtMs: null, attempts: 1, updatedAtMs: T0 + SECOND },
        });
        expect(await repo.getOccurrence("cancelled", T0)).toMatchObject({
          state: "skipped",
          lastError: "busy (not retried: the schedule was cancelled)",
          leaseExpiresAtMs: null,
        });

        expect(await repo.settleOccurrence(claims.get("moved")!, retry, T0 + 2 * SECOND)).toMatchObject({
          settled: true,
          schedule: { state: "active", version: 2, nextAtMs: T0 + HOUR, attempts: 0, retryAtMs: null },
        });
        expect(await repo.getOccurrence("moved", T0)).toMatchObject({
          state: "skipped",
          lastError: "busy (not retried: the schedule was moved to another slot)",
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + HOUR);

        const dispatched = {
          outcome: "dispatched" as const,
          runId: "run_f",
          advance: { state: "completed" as const },
        };
        expect(await repo.settleOccurrence(claims.get("fired")!, dispatched, T0 + 2 * SECOND)).toMatchObject({
          settled: true,
          schedule: { state: "cancelled", lastFiredAtMs: T0 + 2 * SECOND },
        });
        expect(await repo.getOccurrence("fired", T0)).toMatchObject({ state: "dispatched", runId: "run_f" });
      }),
    );

    test(
      "a settle advances a paused schedule without waking it; a failure is recorded",
      withRepository(async ({ repo }) => {
        await repo.insert(hourly("x", T0), 20);
        const first = await claimed(repo, claimOf("x", T0, "me", T0));
        await repo.pause("x", T0 + SECOND);
        const settled = await repo.settleOccurrence(
          first.claim,
          { outcome: "dispatched", runId: "run_x", advance: { state: "active", nextAtMs: T0 + HOUR } },
          T0 + 2 * SECOND,
        );
        expect(settled).toMatchObject({
          settled: true,
          schedule: { state: "paused", nextAtMs: T0 + HOUR, attempts: 0, lastFiredAtMs: T0 + 2 * SECOND },
        });
        expect(await repo.nextDueAtMs()).toBeNull();
        await repo.resume("x", T0 + HOUR, T0 + 3 * SECOND);
        expect(await repo.nextDueAtMs()).toBe(T0 + HOUR);

        const second = await claimed(repo, claimOf("x", T0 + HOUR, "me", T0 + HOUR));
        const failed = await repo.settleOccurrence(
          second.claim,
          { outcome: "failed", error: "gave up", advance: { state: "active", nextAtMs: T0 + 2 * HOUR } },
          T0 + HOUR + SECOND,
        );
        expect(failed).toMatchObject({
          settled: true,
          schedule: {
            state: "active",
            nextAtMs: T0 + 2 * HOUR,
            attempts: 0,
            lastError: "gave up",
            lastFiredAtMs: T0 + 2 * SECOND,
          },
        });
        expect(await repo.getOccurrence("x", T0 + HOUR)).toMatchObject({
          state: "failed",
          lastError: "gave up",
        });

        await repo.insert(oneOff("y", T0), 20);
        const third = await claimed(repo, claimOf("y", T0, "me", T0));
        expect(
          await repo.settleOccurrence(
            third.claim,
            { outcome: "failed", error: "refused", advance: { state: "failed" } },
            T0 + SECOND,
          ),
        ).toMatchObject({
          settled: true,
          schedule: { state: "failed", nextAtMs: null, lastError: "refused" },
        });
        expect(await repo.nextDueAtMs()).toBe(T0 + 2 * HOUR);
      }),
    );

    test(
      "pause, resume, cancel and edit refuse the wrong state or version; lists are oldest first",
      withRepository(async ({ repo }) => {
        await repo.insert(oneOff("a", T0), 20);
        await repo.insert(oneOff("B", T0 + SECOND), 20); // same creation time: byte order of ids
        await repo.insert({ ...oneOff("c", T0), createdAtMs: T0 - 1 }, 20);
        await repo.insert(oneOff("d", T0, "conv_2"), 20);
        expect(await repo.pause("missing", T0)).toBeNull();
        expect(await repo.resume("a", T0, T0)).toBeNull();
        expect(await repo.pause("a", T0)).toMatchObject({ state: "paused", updatedAtMs: T0 });
        expect(await repo.pause("a", T0)).toBeNull();
        expect(await repo.edit("a", 2, { prompt: "new", nextAtMs: T0 }, T0)).toBeNull();
        expect(await repo.edit("a", 1, { prompt: "new", nextAtMs: T0 }, T0)).toMatchObject({
          state: "paused",
          prompt: "new",
          version: 2,
        });
        expect(await repo.nextDueAtMs()).toBe(T0); // c and d; the paused a has no due time
        expect(await repo.cancel("a", T0)).toMatchObject({ state: "cancelled", version: 2 });
        expect(await repo.cancel("a", T0)).toBeNull();
        expect(await repo.resume("a", T0, T0)).toBeNull();
        expect(await repo.edit("a", 2, { prompt: "newer", nextAtMs: T0 }, T0)).toBeNull();
        expect(await repo.pause("a", T0)).toBeNull();

        const ids = async (states: Parameters<ScheduleRepository["listByConversation"]>[1]) =>
          (await repo.listByConversation("conv_1", states)).map((s) => s.id);
        expect(await ids(["active", "paused"])).toEqual(["c", "B"]);
        expect(await ids(SCHEDULE_STATES)).toEqual(["c", "B", "a"]);
        expect(await ids(["cancelled"])).toEqual(["a"]);
        expect(await ids([])).toEqual([]);
        expect(await repo.listByConversation("conv_none", SCHEDULE_STATES)).toEqual([]);
      }),
    );

    test(
      "expireLeases ends the live leases of other owners, and only those, so their slots are due at once",
      withRepository(async ({ repo }) => {
        for (const id of ["dead", "mine", "lapsed", "free"]) await repo.insert(oneOff(id, T0), 20);
        const dead = await claimed(repo, claimOf("dead", T0, "owner-dead", T0));
        await claimed(repo, claimOf("mine", T0, "owner-me", T0));
        await claimed(repo, { ...claimOf("lapsed", T0, "owner-dead", T0), leaseMs: SECOND });

        const now = T0 + 5 * SECOND;
        expect(await repo.expireLeases({ exceptOwner: "owner-me", nowMs: now })).toBe(1);
        expect(await repo.getOccurrence("dead", T0)).toMatchObject({
          leaseExpiresAtMs: now,
          updatedAtMs: now,
        });
        expect(await repo.getOccurrence("mine", T0)).toMatchObject({ leaseExpiresAtMs: T0 + MINUTE });
        expect(await repo.getOccurrence("lapsed", T0)).toMatchObject({ leaseExpiresAtMs: T0 + SECOND });
        expect((await repo.listDue(now, 10)).map((s) => s.id)).toEqual(["free", "lapsed", "dead"]);

        const taken = await claimed(repo, claimOf("dead", T0, "owner-me", now));
        expect(taken.claim).toMatchObject({ fencingToken: 2, attempt: 2 });
        expect(
          await repo.settleOccurrence(
            dead.claim,
            { outcome: "dispatched", runId: "late", advance: { state: "completed" } },
            now,
          ),
        ).toEqual({ settled: false, reason: "fence_lost" });
        expect(await repo.expireLeases({ exceptOwner: "owner-me", nowMs: now })).toBe(0);

        // A slot the schedule moved away from keeps a claim of its own: that lease ends, and only
        // that one; the schedule stays due when its current slot's lease expires.
        await repo.insert(hourly("moved", T0), 20);
        await claimed(repo, { ...claimOf("moved", T0, "owner-dead", T0), leaseMs: 2 * HOUR });
        await repo.edit("moved", 1, { prompt: "later", nextAtMs: T0 + HOUR }, T0 + SECOND);
        await claimed(repo, claimOf("moved", T0 + HOUR, "owner-me", T0 + HOUR, 2));
        const later = T0 + HOUR + SECOND;
        expect(await repo.expireLeases({ exceptOwner: "owner-me", nowMs: later })).toBe(1);
        expect(await repo.getOccurrence("moved", T0)).toMatchObject({ leaseExpiresAtMs: later });
        expect(await repo.getOccurrence("moved", T0 + HOUR)).toMatchObject({
          leaseExpiresAtMs: T0 + HOUR + MINUTE,
        });
        expect((await repo.listDue(later, 10)).map((s) => s.id)).not.toContain("moved");
      }),
    );

    test(
      "a skip records the slot and advances; a changed schedule is not skipped; occurrences list newest first",
      withRepository(async ({ repo }) => {
        await repo.insert(hourly("s", T0), 20);
        const skip = (over: Partial<Parameters<ScheduleRepository["skipOccurrence"]>[0]>) =>
          repo.skipOccurrence({
            scheduleId: "s",
            expectedVersion: 1,
            scheduledForMs: T0,
            reason: "missed by 2 h",
            advance: { state: "active", nextAtMs: T0 + HOUR },
            nowMs: T0 + 2 * HOUR,
            ...over,
          });
        expect(await skip({ expectedVersion: 2 })).toBeNull();
        expect(await skip({ scheduledForMs: T0 + HOUR })).toBeNull();
        expect(await skip({ scheduleId: "missing" })).toBeNull();
        expect(await skip({})).toMatchObject({ state: "active", nextAtMs: T0 + HOUR, attempts: 0 });
        expect(await repo.getOccurrence("s", T0)).toEqual({
          scheduleId: "s",
          scheduledForMs: T0,
          scheduleVersion: 1,
          state: "skipped",
          attempts: 0,
          lateByMs: null,
          runId: null,
          lastError: "missed by 2 h",
          leaseOwner: null,
          leaseExpiresAtMs: null,
          fencingToken: 0,
          createdAtMs: T0 + 2 * HOUR,
          updatedAtMs: T0 + 2 * HOUR,
        });

        const { claim } = await claimed(repo, claimOf("s", T0 + HOUR, "me", T0 + 2 * HOUR));
        await repo.settleOccurrence(
          claim,
          { outcome: "dispatched", runId: "run_s", advance: { state: "active", nextAtMs: T0 + 3 * HOUR } },
          T0 + 2 * HOUR,
        );
        await repo.pause("s", T0 + 2 * HOUR);
        expect(
          await skip({
            scheduledForMs: T0 + 3 * HOUR,
            advance: { state: "active", nextAtMs: T0 + 4 * HOUR },
          }),
        ).toBeNull();

        const slots = async (limit: number) =>
          (await repo.listOccurrences("s", limit)).map((o) => o.scheduledForMs);
        expect(await slots(10)).toEqual([T0 + HOUR, T0]);
        expect(await slots(1)).toEqual([T0 + HOUR]);
        expect(await repo.listOccurrences("missing", 10)).toEqual([]);
        expect(await repo.getOccurrence("s", T0 + 5 * HOUR)).toBeNull();
      }),
    );

    test(
      "an expired lease is re-claimed by a second instance with a higher token; the first one's late settle is refused",
      withRepository(async ({ repo, connect }) => {
        const start = T0;
        const timeA = new FakeClock(start);
        const timeB = new FakeClock(start);

        let releaseA: ((result: DispatchResult) => void) | undefined;
        const dispatcherA = recordingDispatch(
          () =>
            new Promise<DispatchResult>((resolve) => {
              releaseA = resolve; // owner A "dies" mid-dispatch: it never answers in time
            }),
        );
        const eventsA: ScheduleEvent[] = [];
        const serviceA = createScheduleService({
          repository: repo,
          dispatch: dispatcherA.dispatch,
          clock: timeA,
          owner: "owner-a",
          onEvent: (event) => eventsA.push(event),
        });
        const repositoryB = await connect();
        const dispatcherB = recordingDispatch(() => ({ status: "ok", runId: "run_from_b" }));
        const serviceB = createScheduleService({
          repository: repositoryB,
          dispatch: dispatcherB.dispatch,
          clock: timeB,
          owner: "owner-b",
        });

        const created = await serviceA.create({ ...base, when: { kind: "after", delayMs: MINUTE } });
        const slot = start + MINUTE;
        await timeA.advanceTo(slot);
        const tickA = serviceA.tick(); // not started: driven by hand; stays pending while dispatch hangs
        await waitUntil(() => dispatcherA.requests.length > 0, "instance A dispatches");
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
      }),
    );

    test(
      "a claim made under an older version is refused",
      withRepository(async ({ repo }) => {
        const time = new FakeClock(Date.parse("2026-06-01T08:00:00Z"));
        const service = createScheduleService({
          repository: repo,
          dispatch: recordingDispatch().dispatch,
          clock: time,
        });
        const created = await service.create({
          ...base,
          when: { kind: "cron", expression: "0 9 * * *" },
          timezone: "UTC",
        });
        await time.advanceTo(Date.parse("2026-06-01T09:00:00Z"));
        const [listed] = await repo.listDue(time.now(), 10);
        expect(listed?.version).toBe(1);
        await service.edit(created.id, { prompt: "water the plants twice" });
        const claim = await repo.claimOccurrence({
          scheduleId: created.id,
          expectedVersion: 1,
          scheduledForMs: listed?.nextAtMs as number,
          owner: "stale-owner",
          nowMs: time.now(),
          leaseMs: MINUTE,
        });
        expect(claim).toEqual({ claimed: false, reason: "stale" });
      }),
    );
  });
}
