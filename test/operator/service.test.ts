import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { isSwitchboardError, type SwitchboardErrorCode } from "../../src/errors.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import {
  backupDatabase,
  checkDatabase,
  EXPECTED_SCHEMA_VERSION,
  migrateDatabaseFile,
  openExistingStores,
} from "../../src/store/sqlite/operator.ts";
import { tempDir } from "../support/runtime.ts";
import { type Seed, seedDatabase } from "./support/seed.ts";

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let operator: OperatorService;
let nudges: number;
let scheduleNudges: number;

beforeEach(async () => {
  dir = tempDir("switchboard-operator-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  nudges = 0;
  scheduleNudges = 0;
  operator = createOperatorService({
    stores: seed.stores,
    clock: seed.clock,
    onOutboxChanged: () => {
      nudges += 1;
    },
    onSchedulesChanged: () => {
      scheduleNudges += 1;
    },
  });
});

afterEach(() => {
  seed.stores.close();
  dir.cleanup();
});

async function refusal(promise: Promise<unknown>, code: SwitchboardErrorCode, message: RegExp) {
  try {
    await promise;
  } catch (error) {
    if (!isSwitchboardError(error)) throw error;
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    return;
  }
  throw new Error(`expected ${code}, but the call succeeded`);
}

describe("runs", () => {
  test("lists newest first, filtered by state and conversation, limited", async () => {
    const all = (await operator.runs.list({})).items;
    expect(all.map((r) => r.id)).toEqual([
      seed.queuedRunId,
      seed.pending.runId,
      seed.failed.runId,
      seed.ambiguous.runId,
      seed.delivered.runId,
    ]);
    expect((await operator.runs.list({ state: "queued" })).items.map((r) => r.id)).toEqual([
      seed.queuedRunId,
    ]);
    const slack = (await operator.runs.list({ conversationId: seed.slack.conversationId })).items;
    expect(slack.map((r) => r.id)).toEqual([seed.pending.runId, seed.failed.runId]);
    expect(await operator.runs.list({ conversationId: "conv_unknown" })).toEqual({
      items: [],
      nextCursor: null,
    });
  });

  test("pages with an opaque cursor: no repeats, no gaps, null after the last page", async () => {
    const all = (await operator.runs.list({})).items.map((r) => r.id);
    const first = await operator.runs.list({ limit: 2 });
    expect(first.items.map((r) => r.id)).toEqual(all.slice(0, 2));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await operator.runs.list({ limit: 2, cursor: first.nextCursor! });
    expect(second.items.map((r) => r.id)).toEqual(all.slice(2, 4));
    const last = await operator.runs.list({ limit: 2, cursor: second.nextCursor! });
    expect(last).toEqual({ items: [expect.objectContaining({ id: all[4] })], nextCursor: null });
    // A run admitted while paging is newer than every page: it never shifts a later page.
    const filtered = await operator.runs.list({ state: "completed", limit: 1 });
    expect(filtered.items).toHaveLength(1);
    await refusal(
      operator.runs.list({ cursor: "bm90LWEtY3Vyc29y" }),
      "input_invalid",
      /cursor "bm90LWEtY3Vyc29y" is not a cursor of the runs list; pass the nextCursor/,
    );
    const outboxCursor = (await operator.outbox.list({ limit: 1 })).nextCursor!;
    await refusal(
      operator.runs.list({ cursor: outboxCursor }),
      "input_invalid",
      /not a cursor of the runs list/,
    );
  });

  test("refuses an unknown state and a limit out of range, naming the allowed values", async () => {
    await refusal(
      operator.runs.list({ state: "done" as never }),
      "input_invalid",
      /state "done" is not one of queued, running/,
    );
    await refusal(
      operator.runs.list({ limit: 0 }),
      "input_invalid",
      /limit must be an integer from 1 to 1000/,
    );
  });

  test("shows a run with its answer text and usage; null when unknown", async () => {
    const shown = await operator.runs.show(seed.delivered.runId);
    expect(shown?.run.state).toBe("completed");
    expect(shown?.answerText).toBe("Here is **the summary**.");
    expect(shown?.usage).toEqual({});
    const queued = await operator.runs.show(seed.queuedRunId);
    expect(queued?.answerText).toBe("");
    expect(await operator.runs.show("run_nope")).toBeNull();
  });
});

describe("conversations", () => {
  test("lists the most recently active first with key, run counts and active runs", async () => {
    const list = (await operator.conversations.list({})).items;
    expect(list.map((c) => c.id)).toEqual([seed.telegram.conversationId, seed.slack.conversationId]);
    const [telegram, slack] = list;
    expect(telegram).toMatchObject({ key: seed.telegram.key, runs: 3, activeRuns: 1 });
    expect(slack).toMatchObject({ key: seed.slack.key, runs: 2, activeRuns: 0 });
    expect(telegram!.lastActivityAtMs!).toBeGreaterThan(slack!.lastActivityAtMs!);
    expect(telegram!.createdAtMs).toBeLessThan(slack!.createdAtMs);
    const first = await operator.conversations.list({ limit: 1 });
    expect(first.items.map((c) => c.id)).toEqual([seed.telegram.conversationId]);
    const second = await operator.conversations.list({ limit: 1, cursor: first.nextCursor! });
    expect(second).toEqual({
      items: [expect.objectContaining({ id: seed.slack.conversationId })],
      nextCursor: null,
    });
  });

  test("shows messages newest first, paged to older ones, with their runs' states", async () => {
    const first = await operator.conversations.show(seed.telegram.conversationId, { limit: 3 });
    expect(first?.conversation.key).toBe(seed.telegram.key);
    expect(first?.items.map((i) => [i.message.role, i.runState])).toEqual([
      ["user", "queued"],
      ["assistant", "completed"],
      ["user", "completed"],
    ]);
    expect(first?.nextCursor).toEqual(expect.any(String));
    const rest = await operator.conversations.show(seed.telegram.conversationId, {
      cursor: first!.nextCursor!,
      limit: 3,
    });
    expect(rest?.items.map((i) => [i.message.role, i.runState])).toEqual([
      ["assistant", "completed"],
      ["user", "completed"],
    ]);
    expect(rest!.items[0]!.order).toBeLessThan(first!.items[2]!.order);
    expect(rest?.nextCursor).toBeNull();
    expect(await operator.conversations.show("conv_nope", {})).toBeNull();
    await refusal(
      operator.conversations.show(seed.telegram.conversationId, { cursor: "-1" }),
      "input_invalid",
      /cursor "-1" is not a cursor of the messages list/,
    );
  });
});

describe("outbox", () => {
  test("lists by state and conversation; shows by id or key", async () => {
    const ambiguous = (await operator.outbox.list({ state: "ambiguous" })).items;
    expect(ambiguous.map((r) => r.id)).toEqual([seed.ambiguous.outboxId!]);
    const slack = (await operator.outbox.list({ conversationId: seed.slack.conversationId })).items;
    expect(slack.map((r) => r.id)).toEqual([seed.pending.outboxId!, seed.failed.outboxId!]);
    expect((await operator.outbox.show(`${seed.failed.runId}:0`))?.id).toBe(seed.failed.outboxId!);
    expect(await operator.outbox.show("obx_nope")).toBeNull();
    await refusal(operator.outbox.list({ state: "lost" as never }), "input_invalid", /not one of pending/);
  });

  test("resolve records who, when, what and the note, and wakes the worker", async () => {
    await seed.clock.advance(60_000);
    const resolved = await operator.outbox.resolve(
      seed.ambiguous.outboxId!,
      "delivered",
      "operator:ann",
      "seen in the chat",
    );
    expect(resolved.state).toBe("delivered");
    expect(resolved.history.at(-1)).toEqual({
      atMs: seed.clock.now(),
      actor: "operator:ann",
      action: "resolve delivered",
      note: "seen in the chat",
    });
    expect(nudges).toBe(1);
  });

  test("retry puts a failed record back to pending now with attempts reset", async () => {
    const retried = await operator.outbox.retry(seed.failed.outboxId!, "operator:bob", "chat restored");
    expect(retried).toMatchObject({ state: "pending", attempts: 0, nextAttemptAtMs: seed.clock.now() });
    expect(retried.history.at(-1)).toMatchObject({
      actor: "operator:bob",
      action: "retry",
      note: "chat restored",
    });
    const cancelled = await operator.outbox.cancel(seed.pending.outboxId!, "operator:bob");
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.history.at(-1)).toMatchObject({ actor: "operator:bob", action: "cancel" });
    expect(cancelled.history.at(-1)).not.toHaveProperty("note");
    expect(nudges).toBe(2);
  });

  test("refusals change nothing and do not wake the worker", async () => {
    await refusal(
      operator.outbox.resolve(seed.delivered.outboxId!, "failed", "operator:ann", "oops"),
      "state_conflict",
      /is delivered and cannot become failed; delivered is final/,
    );
    await refusal(operator.outbox.retry("obx_nope", "operator:ann"), "not_found", /outbox list/);
    await refusal(
      operator.outbox.cancel(seed.pending.outboxId!, "operator:two words" as never),
      "input_invalid",
      /use operator:NAME/,
    );
    expect((await operator.outbox.show(seed.pending.outboxId!))?.state).toBe("pending");
    expect(nudges).toBe(0);
  });
});

describe("schedules", () => {
  test("lists live schedules of every conversation, ended ones on request", async () => {
    const { daily, paused, cancelled } = seed.schedules;
    expect((await operator.schedules.list({})).map((s) => s.id)).toEqual([daily.id, paused.id]);
    expect((await operator.schedules.list({ includeEnded: true })).map((s) => s.id)).toEqual([
      daily.id,
      paused.id,
      cancelled.id,
    ]);
    const telegram = await operator.schedules.list({
      conversationId: seed.telegram.conversationId,
      includeEnded: true,
    });
    expect(telegram.map((s) => s.id)).toEqual([daily.id, cancelled.id]);
  });

  test("pause, resume and cancel; refusals name the state; unknown ids are not_found", async () => {
    const { daily, paused, cancelled } = seed.schedules;
    expect((await operator.schedules.pause(daily.id)).state).toBe("paused");
    // Pausing twice changes nothing and is no error.
    const pausedOnce = (await operator.schedules.list({})).find((s) => s.id === daily.id);
    expect(await operator.schedules.pause(daily.id)).toEqual(pausedOnce!);
    expect((await operator.schedules.resume(daily.id)).state).toBe("active");
    expect((await operator.schedules.resume(paused.id)).state).toBe("active");
    expect((await operator.schedules.cancel(daily.id)).state).toBe("cancelled");
    // Each change (and the repeated pause) nudges the scheduler (a resumed slot may be due now); a
    // refusal or a read does not.
    expect(scheduleNudges).toBe(5);
    await refusal(
      operator.schedules.pause(cancelled.id),
      "state_conflict",
      /is cancelled; it cannot be paused/,
    );
    await refusal(operator.schedules.pause("sch_nope"), "not_found", /schedules list --all/);
    await refusal(operator.schedules.runs("sch_nope"), "not_found", /No schedule sch_nope/);
    expect(await operator.schedules.runs(daily.id)).toEqual([]);
    expect(scheduleNudges).toBe(5);
  });
});

describe("database file operations", () => {
  test("check reports the schema version, integrity and counts", () => {
    expect(checkDatabase(seed.stores.db)).toEqual({
      ok: true,
      schemaVersion: EXPECTED_SCHEMA_VERSION,
      expectedVersion: EXPECTED_SCHEMA_VERSION,
      integrity: "ok",
      counts: {
        conversations: 2,
        runs: 5,
        activeRuns: 1,
        outbox: { pending: 1, sending: 0, delivered: 1, failed: 1, ambiguous: 1, cancelled: 0 },
        schedules: 3,
      },
    });
    expect(checkDatabase(seed.stores.db, { quick: true }).integrity).toBe("ok");
  });

  test("backup writes a copy that opens with the same content, and never overwrites", async () => {
    const path = join(dir.path, "backups", "copy.sqlite");
    const result = backupDatabase(seed.stores.db, path);
    expect(result.path).toBe(path);
    expect(result.bytes).toBeGreaterThan(0);
    const copy = openExistingStores(path);
    try {
      expect(checkDatabase(copy.db).counts).toEqual(checkDatabase(seed.stores.db).counts);
      expect((await copy.outbox.show(seed.ambiguous.outboxId!))?.state).toBe("ambiguous");
    } finally {
      copy.close();
    }
    expect(() => backupDatabase(seed.stores.db, path)).toThrow(/already exists; a backup never overwrites/);
  });

  test("opening an existing database never creates one and refuses another schema version", () => {
    const missing = join(dir.path, "absent", "switchboard.sqlite");
    expect(() => openExistingStores(missing)).toThrow(/No database at/);
    expect(existsSync(join(dir.path, "absent"))).toBe(false);

    const old = join(dir.path, "old.sqlite");
    openDatabase({ filename: old, migrations: MIGRATIONS.slice(0, 1) }).close();
    expect(() => openExistingStores(old)).toThrow(
      new RegExp(`schema version 1; this switchboard expects ${EXPECTED_SCHEMA_VERSION}.*db migrate`),
    );
    expect(migrateDatabaseFile(old)).toEqual({
      path: old,
      fromVersion: 1,
      toVersion: EXPECTED_SCHEMA_VERSION,
    });
    openExistingStores(old).close();
  });

  test("migrate creates a missing database and is a no-op on a current one", () => {
    const fresh = join(dir.path, "new", "switchboard.sqlite");
    expect(migrateDatabaseFile(fresh)).toEqual({
      path: fresh,
      fromVersion: 0,
      toVersion: EXPECTED_SCHEMA_VERSION,
    });
    expect(migrateDatabaseFile(fresh).fromVersion).toBe(EXPECTED_SCHEMA_VERSION);
    const stores = openSqliteStores(fresh);
    expect(checkDatabase(stores.db).counts.runs).toBe(0);
    stores.close();
  });
});
