import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { createScheduleService } from "../../schedules/service.ts";
import type { ScheduleEvent, ScheduleRepository } from "../../schedules/types.ts";
import { createPostgresScheduleRepository } from "../../src/store/postgres/schedules.ts";
import { migrate } from "../../src/store/postgres/schema.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { oneOff, runScheduleRepositoryConformance, T0 } from "./repository-conformance.ts";
import { recordingDispatch } from "./support/dispatcher.ts";
import { CONVERSATION } from "./support/harness.ts";
import { waitUntil } from "./support/wait.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

useTestServer();

/**
 * A fresh, migrated database. `connect()` opens a further connection pool on it, as another
 * process would; `close()` ends every pool and drops the database.
 */
async function openDatabase() {
  const db = await createDatabase();
  const pools: SQL[] = [];
  const connect = () => {
    const sql = new SQL(db.url, { adapter: "postgres" });
    pools.push(sql);
    return sql;
  };
  const close = async () => {
    await Promise.all(pools.map((pool) => pool.close()));
    await db.drop();
  };
  try {
    const sql = connect();
    await migrate(sql);
    return { sql, connect, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Runs `fn` with two repositories on one fresh database, each on its own pool (two processes). */
async function withTwoProcesses(fn: (a: ScheduleRepository, b: ScheduleRepository) => Promise<void>) {
  const database = await openDatabase();
  try {
    await fn(
      createPostgresScheduleRepository(database.sql),
      createPostgresScheduleRepository(database.connect()),
    );
  } finally {
    await database.close();
  }
}

runScheduleRepositoryConformance("postgres", async () => {
  const database = await openDatabase();
  return {
    repo: createPostgresScheduleRepository(database.sql),
    connect: async () => createPostgresScheduleRepository(database.connect()),
    close: database.close,
  };
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("postgres schedule repository", () => {
  test("the schema refuses a recurring schedule without a zone, and unreadable rows name the fix", async () => {
    const database = await openDatabase();
    try {
      const { sql } = database;
      const repository = createPostgresScheduleRepository(sql);
      await expect(
        sql`INSERT INTO schedules (id, conversation_id, reply_target, channel, created_by, prompt, kind, cron,
              missed_policy, max_attempts, state, created_at_ms, updated_at_ms)
            VALUES ('x', 'c', 't', 'telegram', 'user', 'p', 'every', '0 9 * * *', 'once', 10, 'active', 0, 0)`,
      ).rejects.toThrow(/violates check constraint/);
      await repository.insert(oneOff("a", T0), 20);
      await sql`UPDATE schedules SET channel = 'carrier-pigeon' WHERE id = 'a'`;
      const refused = repository.get("a");
      await expect(refused).rejects.toMatchObject({ code: "schema_unsupported" });
      await expect(refused).rejects.toThrow(/Stored schedule a is not readable by this switchboard/);
      await expect(repository.pause("a", T0)).rejects.toThrow(/upgrade switchboard or restore a backup/);
    } finally {
      await database.close();
    }
  });

  test("two processes racing to claim one due slot: one wins each round, and no fencing token repeats", async () => {
    await withTwoProcesses(async (a, b) => {
      const schedules = ["s1", "s2", "s3", "s4"];
      for (const id of schedules) await a.insert(oneOff(id, T0), 20);
      const rounds = 15;
      for (const round of range(rounds)) {
        // Each round starts after the previous lease expired, so the slot is due again for both.
        const nowMs = T0 + (round - 1) * (MINUTE + 1);
        const results = await Promise.all(
          schedules.flatMap((id) =>
            [a, b].map((repo, i) =>
              repo.claimOccurrence({
                scheduleId: id,
                expectedVersion: 1,
                scheduledForMs: T0,
                owner: `process-${i}`,
                nowMs,
                leaseMs: MINUTE,
              }),
            ),
          ),
        );
        for (const [index, id] of schedules.entries()) {
          const pair = results.slice(2 * index, 2 * index + 2);
          const winners = pair.flatMap((r) => (r.claimed ? [r.claim] : []));
          expect(winners.map((w) => [id, w.fencingToken, w.attempt])).toEqual([[id, round, round]]);
          expect(pair.filter((r) => !r.claimed)).toEqual([{ claimed: false, reason: "stale" }]);
        }
      }
      for (const id of schedules) {
        expect(await b.getOccurrence(id, T0)).toMatchObject({ fencingToken: rounds, attempts: rounds });
      }
    });
  });

  test("inserts racing on two processes at the live limit never exceed it", async () => {
    await withTwoProcesses(async (a, b) => {
      const limit = 5;
      const conversations = ["c1", "c2", "c3"];
      const attempts = conversations.flatMap((conversation) =>
        range(12).map((i) => ({
          repo: i % 2 === 0 ? a : b,
          schedule: oneOff(`${conversation}-${i}`, T0, conversation),
        })),
      );
      const results = await Promise.all(attempts.map(({ repo, schedule }) => repo.insert(schedule, limit)));
      for (const conversation of conversations) {
        const mine = results.filter((_, i) => attempts[i]!.schedule.conversationId === conversation);
        expect(mine.filter((r) => r.inserted)).toHaveLength(limit);
        expect(new Set(mine.flatMap((r) => (r.inserted ? [] : [r.liveCount])))).toEqual(new Set([limit]));
        expect(await a.listByConversation(conversation, ["active", "paused"])).toHaveLength(limit);
      }
    });
  });

  test("the schedule service on PostgreSQL fires a one-off once", async () => {
    const database = await openDatabase();
    const time = new FakeClock(T0);
    const dispatcher = recordingDispatch();
    const events: ScheduleEvent[] = [];
    const repository = createPostgresScheduleRepository(database.sql);
    const service = createScheduleService({
      repository,
      dispatch: dispatcher.dispatch,
      clock: time,
      owner: "owner-pg",
      onEvent: (event) => events.push(event),
    });
    try {
      await service.start();
      const created = await service.create({
        ...CONVERSATION,
        createdBy: "user",
        prompt: "water the plants",
        when: { kind: "after", delayMs: 10 * MINUTE },
      });
      const slot = T0 + 10 * MINUTE;
      expect(time.pendingAt()).toEqual([slot]);

      await time.advanceTo(slot);
      await waitUntil(
        async () => (await repository.get(created.id))?.state === "completed",
        "the one-off completes",
      );
      expect(dispatcher.requests.map((r) => r.idempotencyKey)).toEqual([`schedule:${created.id}:${slot}`]);
      expect(await repository.get(created.id)).toMatchObject({
        nextAtMs: null,
        attempts: 0,
        lastFiredAtMs: slot,
      });
      expect(await repository.getOccurrence(created.id, slot)).toMatchObject({
        state: "dispatched",
        runId: "run_1",
        attempts: 1,
        fencingToken: 1,
        leaseOwner: "owner-pg",
      });
      await waitUntil(() => time.pendingAt().length === 0, "the idle service drops its timer");

      await time.advance(24 * HOUR);
      expect(dispatcher.requests).toHaveLength(1);
      expect(events.filter((e) => e.type !== "dispatched")).toEqual([]);
    } finally {
      await service.stop();
      await database.close();
    }
  });
});
