import { afterEach, describe, expect, test } from "bun:test";
import type { Schedule } from "../../schedules/types.ts";
import { createSqliteScheduleRepository } from "../../src/store/sqlite/schedules.ts";
import { openTestDatabase } from "./support/db.ts";

let cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
  cleanups = [];
});

const T0 = Date.parse("2026-06-01T10:00:00Z");

function oneOff(id: string, atMs: number, conversationId = "conv_1"): Schedule {
  return {
    id,
    conversationId,
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

function setup() {
  const database = openTestDatabase();
  cleanups.push(() => database.close());
  return { database, repository: createSqliteScheduleRepository(database.db) };
}

describe("sqlite schedule repository", () => {
  test("round-trips every timing shape; due selection is ordered, bounded and skips paused rows", async () => {
    const { repository } = setup();
    await repository.insert(oneOff("a", T0 + 3000), 20);
    await repository.insert(oneOff("b", T0 + 1000), 20);
    await repository.insert(
      {
        ...oneOff("c", T0 + 2000),
        kind: "every",
        spec: { type: "interval", intervalMs: 60_000, anchorMs: T0 + 2000 },
        timezone: "UTC",
      },
      20,
    );
    await repository.insert(
      {
        ...oneOff("d", T0 + 500),
        kind: "every",
        spec: { type: "cron", expression: "0 9 * * *" },
        timezone: "UTC",
      },
      20,
    );
    await repository.pause("d", T0);
    expect(await repository.get("c")).toMatchObject({
      kind: "every",
      spec: { type: "interval", intervalMs: 60_000, anchorMs: T0 + 2000 },
    });
    expect(await repository.get("d")).toMatchObject({ state: "paused", spec: { expression: "0 9 * * *" } });
    expect(await repository.nextDueAtMs()).toBe(T0 + 1000);
    expect((await repository.listDue(T0 + 5000, 2)).map((s) => s.id)).toEqual(["b", "c"]);
    expect(await repository.listDue(T0, 10)).toEqual([]);
    expect(await repository.get("missing")).toBeNull();
  });

  test("the schema refuses a recurring schedule without a zone, and unreadable rows name the fix", async () => {
    const { database, repository } = setup();
    expect(() =>
      database.db.exec(
        `INSERT INTO schedules (id, conversation_id, reply_target, channel, created_by, prompt, kind, cron,
           missed_policy, max_attempts, state, created_at_ms, updated_at_ms)
         VALUES ('x', 'c', 't', 'telegram', 'user', 'p', 'every', '0 9 * * *', 'once', 10, 'active', 0, 0)`,
      ),
    ).toThrow(/CHECK constraint failed/);
    await repository.insert(oneOff("a", T0), 20);
    database.db.exec("UPDATE schedules SET channel = 'carrier-pigeon' WHERE id = 'a'");
    await expect(repository.get("a")).rejects.toThrow(
      /Stored schedule a is not readable by this switchboard/,
    );
  });

  test("the per-conversation limit is checked in the inserting transaction", async () => {
    const { repository } = setup();
    expect(await repository.insert(oneOff("a", T0), 2)).toEqual({ inserted: true });
    expect(await repository.insert(oneOff("b", T0), 2)).toEqual({ inserted: true });
    expect(await repository.insert(oneOff("c", T0), 2)).toEqual({ inserted: false, liveCount: 2 });
    expect(await repository.insert(oneOff("d", T0, "conv_2"), 2)).toEqual({ inserted: true });
    expect(await repository.get("c")).toBeNull();
  });

  test("a settle needs the claim's owner and token", async () => {
    const { repository } = setup();
    await repository.insert(oneOff("a", T0), 20);
    const result = await repository.claimOccurrence({
      scheduleId: "a",
      expectedVersion: 1,
      scheduledForMs: T0,
      owner: "me",
      nowMs: T0,
      leaseMs: 60_000,
    });
    if (!result.claimed) throw new Error("expected a claim");
    const second = await repository.claimOccurrence({
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
      await repository.settleOccurrence({ ...result.claim, owner: "impostor" }, settlement, T0 + 2),
    ).toEqual({
      settled: false,
      reason: "fence_lost",
    });
    expect(
      await repository.settleOccurrence({ ...result.claim, fencingToken: 0 }, settlement, T0 + 2),
    ).toMatchObject({ settled: false });
    expect(await repository.settleOccurrence(result.claim, settlement, T0 + 2)).toMatchObject({
      settled: true,
      schedule: { state: "completed", lastFiredAtMs: T0 + 2 },
    });
    expect(await repository.settleOccurrence(result.claim, settlement, T0 + 3)).toEqual({
      settled: false,
      reason: "fence_lost",
    });
  });
});
