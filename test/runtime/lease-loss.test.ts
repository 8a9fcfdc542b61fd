/**
 * A run whose lease is lost stops its work at once: the model call in flight is aborted, a tool in
 * flight is signalled, and the lost execution writes nothing more; the run's next owner finishes
 * it. Time is a FakeClock, so "within one renewal interval" is exact; PostgreSQL answers over a
 * socket, so waits for what the runtime does in response are real.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { tool } from "ai";
import { z } from "zod";
import { toUsage } from "../../src/models/usage.ts";
import { renewalIntervalMs } from "../../src/runtime/lease-keeper.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import type { AnswerDelivery, Fence, RuntimeStore } from "../../src/runtime/store.ts";
import { OUTCOME_UNKNOWN } from "../../src/runtime/tool-calls.ts";
import { openPostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { eventually } from "../e2e/support/gateway-process.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { createScriptedModel } from "../support/llm/scripted-model.ts";
import { type LogRecord, recordingLogger } from "../support/logger.ts";
import { createDatabase, queryDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { createEngineHarness, ENGINES, type EngineHarness, text } from "../support/runtime.ts";

useTestServer();

const LEASE_MS = 3_000;
const INTERVAL_MS = renewalIntervalMs(LEASE_MS);
/** Real time allowed for the runtime to act on what a fake-clock tick started. */
const REACTION_MS = 5_000;

type RenewalMode = "pass" | "error";

/** A fenced write the runtime made, with the fencing token it was made under. */
interface FencedWrite {
  method: string;
  fencingToken: number;
}

/**
 * Makes the store's renewals pass or fail with an error (the database does not answer), and
 * records every fenced write the runtime makes and each look for the next run.
 */
function instrument(store: RuntimeStore) {
  const state = {
    renewals: "pass" as RenewalMode,
    /** Renewals answered (held or not) or failed. */
    renewalsDone: 0,
    /** Looks for the next run: the lane does it once an execution ended. */
    acquisitions: 0,
    writes: [] as FencedWrite[],
  };
  const acquireNext = store.acquireNext.bind(store);
  store.acquireNext = (request) => {
    state.acquisitions += 1;
    return acquireNext(request);
  };
  const renew = store.renewLease.bind(store);
  store.renewLease = async (fence, nowMs, leaseMs) => {
    try {
      if (state.renewals === "error") throw new Error("Connection terminated unexpectedly");
      return await renew(fence, nowMs, leaseMs);
    } finally {
      state.renewalsDone += 1;
    }
  };
  const record = <K extends keyof RuntimeStore>(method: K, fenceOf: (args: unknown[]) => Fence) => {
    const original = (store[method] as (...args: unknown[]) => Promise<unknown>).bind(store);
    (store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      state.writes.push({ method, fencingToken: fenceOf(args).fencingToken });
      return original(...args);
    };
  };
  const first = (args: unknown[]) => args[0] as Fence;
  const inRequest = (args: unknown[]) => (args[0] as { fence: Fence }).fence;
  record("saveToolProgress", first);
  record("saveInputParts", first);
  record("enqueueFiles", first);
  record("releaseRun", first);
  record("checkpoint", inRequest);
  record("commitTerminal", inRequest);
  return state;
}

/** Lets what a step started (a stream's abort, a lane's next look) run in real time. */
const settleReal = () => Bun.sleep(100);

const events = (logger: { records: LogRecord[] }, event: string) =>
  logger.records.filter((r) => r.event === event);

let harness: EngineHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

for (const engine of ENGINES) {
  describe(`${engine}: a lost lease stops the run's work`, () => {
    test("renewals failing mid-call: the call runs until the lease expires, is aborted then, and nothing is written after", async () => {
      const clock = new FakeClock();
      const logger = recordingLogger();
      let failuresCounted = 0;
      harness = await createEngineHarness(
        engine,
        [
          { type: "hang", text: "partial " },
          { type: "text", text: "answered by the next owner" },
        ],
        { clock, logger, leaseMs: LEASE_MS, leaseRenewals: { failed: () => failuresCounted++ } },
      );
      const store = instrument(harness.store);
      const ticket = harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") });
      const { runId } = await ticket.admission;
      const call = await harness.model.whenCalled(1);
      const fencingToken = (await harness.store.loadRun(runId))!.run.fencingToken;
      const acquiredAtMs = clock.now();

      store.renewals = "error";
      await clock.advance(INTERVAL_MS);
      await eventually(() => failuresCounted === 1, REACTION_MS, "the first failed renewal to be counted");
      await clock.advance(INTERVAL_MS);
      await eventually(() => failuresCounted === 2, REACTION_MS, "the second failed renewal to be counted");
      // Up to its expiry the lease may still be ours: a transient error does not stop the run.
      await clock.advanceTo(acquiredAtMs + LEASE_MS - 1);
      expect(call.aborted).toBe(false);
      const writesBeforeLoss = store.writes.length;

      await clock.advanceTo(acquiredAtMs + LEASE_MS);
      await eventually(() => call.aborted, REACTION_MS, "the model call to be aborted at the lease's expiry");
      store.renewals = "pass";
      const outcome = await ticket.result;

      // The old execution wrote nothing after its loss; the next owner (this process, under a
      // new fencing token) resumed the run and answered once.
      const late = store.writes.slice(writesBeforeLoss);
      expect(late.filter((w) => w.fencingToken === fencingToken)).toEqual([]);
      expect(late.map((w) => w.method)).toEqual(["commitTerminal"]);
      expect(outcome.state).toBe("completed");
      expect(outcome.text).toBe("answered by the next owner");
      expect(harness.model.requests).toHaveLength(2);

      expect(failuresCounted).toBe(2);
      // Logged, but at most once per run in 30 s.
      const warnings = events(logger, "run.lease_renewal_failed");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({
        level: "warn",
        runId,
        failures: 1,
        error: { message: "Connection terminated unexpectedly" },
      });
      expect(events(logger, "run.lease_lost")).toMatchObject([{ runId, fencingToken, reason: "expired" }]);
    }, 30_000);

    test("a renewal that succeeds in time keeps the run going through earlier failures", async () => {
      const clock = new FakeClock();
      const logger = recordingLogger();
      harness = await createEngineHarness(engine, [{ type: "hang", text: "still thinking" }], {
        clock,
        logger,
        leaseMs: LEASE_MS,
      });
      const store = instrument(harness.store);
      const ticket = harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") });
      const { runId } = await ticket.admission;
      const call = await harness.model.whenCalled(1);
      const acquiredAtMs = clock.now();
      store.renewals = "error";
      await clock.advance(INTERVAL_MS);
      await eventually(() => store.renewalsDone === 1, REACTION_MS, "the failing renewal");
      store.renewals = "pass";
      // The next renewals extend the lease past its first expiry: the call goes on.
      for (let i = 0; i < 4; i++) {
        const done = store.renewalsDone;
        await clock.advance(INTERVAL_MS);
        await eventually(() => store.renewalsDone > done, REACTION_MS, "a renewal");
      }
      await settleReal();
      expect(clock.now()).toBeGreaterThan(acquiredAtMs + LEASE_MS);
      expect(call.aborted).toBe(false);
      expect(events(logger, "run.lease_lost")).toEqual([]);
      expect(await harness.runtime.interrupt({ conversationId: "c", runId })).toBe(true);
      expect((await ticket.result).state).toBe("interrupted");
    }, 30_000);

    test("another owner takes the run mid-call: the next renewal answers not held and the call is aborted within one interval", async () => {
      const clock = new FakeClock();
      const logger = recordingLogger();
      harness = await createEngineHarness(engine, [{ type: "hang" }], { clock, logger, leaseMs: LEASE_MS });
      const store = instrument(harness.store);
      const ticket = harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") });
      const { runId } = await ticket.admission;
      const call = await harness.model.whenCalled(1);
      const fencingToken = (await harness.store.loadRun(runId))!.run.fencingToken;

      // A standby taking over: it expires the leases of other owners and takes the run.
      await harness.store.expireLeases({ exceptOwner: "standby", nowMs: clock.now() });
      const { acquired } = await harness.store.acquireNext({
        conversationId: (await harness.store.loadRun(runId))!.run.conversationId,
        owner: "standby",
        nowMs: clock.now(),
        leaseMs: LEASE_MS,
      });
      expect(acquired?.fence.fencingToken).toBe(fencingToken + 1);
      const writesBeforeLoss = store.writes.length;
      const acquisitionsBeforeLoss = store.acquisitions;

      await clock.advance(INTERVAL_MS);
      await eventually(() => call.aborted, REACTION_MS, "the model call to be aborted");
      await eventually(
        () => store.acquisitions > acquisitionsBeforeLoss,
        REACTION_MS,
        "the lost execution to end (its lane looks for the next run)",
      );
      expect(events(logger, "run.lease_lost")).toMatchObject([{ runId, fencingToken, reason: "not_held" }]);
      expect(store.writes.slice(writesBeforeLoss)).toEqual([]);
      // The run is the standby's: this process did not take it back.
      expect((await harness.store.loadRun(runId))!.run).toMatchObject({
        owner: "standby",
        fencingToken: fencingToken + 1,
        state: "running",
      });
    }, 30_000);

    test("a tool in flight is signalled, its result is not saved, and the next owner reports its outcome as unknown", async () => {
      const clock = new FakeClock();
      const logger = recordingLogger();
      const calls: string[] = [];
      let started: () => void = () => {};
      const toolStarted = new Promise<void>((resolve) => {
        started = resolve;
      });
      const tools = () => ({
        transfer: tool({
          description: "Moves money (not safe to run twice).",
          inputSchema: z.object({ amount: z.number() }),
          execute: async ({ amount }, { abortSignal }) => {
            calls.push(`begin ${amount}`);
            started();
            await new Promise<void>((resolve) => abortSignal?.addEventListener("abort", () => resolve()));
            calls.push(`signalled ${amount}`);
            return "stopped";
          },
        }),
      });
      harness = await createEngineHarness(
        engine,
        [
          { type: "tool-call", toolName: "transfer", input: { amount: 5 } },
          { type: "text", text: "I could not confirm the transfer." },
        ],
        { clock, logger, leaseMs: LEASE_MS, tools },
      );
      const store = instrument(harness.store);
      const ticket = harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("pay") });
      const { runId } = await ticket.admission;
      await toolStarted;
      const fencingToken = (await harness.store.loadRun(runId))!.run.fencingToken;
      const acquiredAtMs = clock.now();
      const writesBeforeLoss = store.writes.length;

      store.renewals = "error";
      await clock.advanceTo(acquiredAtMs + LEASE_MS - 1);
      expect(calls).toEqual(["begin 5"]);
      await clock.advanceTo(acquiredAtMs + LEASE_MS);
      await eventually(() => calls.length === 2, REACTION_MS, "the tool to be signalled");
      store.renewals = "pass";
      const outcome = await ticket.result;

      expect(calls).toEqual(["begin 5", "signalled 5"]);
      const late = store.writes.slice(writesBeforeLoss);
      expect(late.filter((w) => w.fencingToken === fencingToken)).toEqual([]);
      expect(outcome.state).toBe("completed");
      expect(harness.model.requests[1]!.promptText).toContain(OUTCOME_UNKNOWN);
      expect(events(logger, "tool.outcome_unknown")).toMatchObject([{ runId, tool: "transfer" }]);
    }, 30_000);
  });
}

describe("postgres: a standby taking over while a slow model call runs", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  test("the old owner's call is aborted within one renewal interval, and one answer is delivered", async () => {
    const database = await createDatabase({ migrated: true });
    cleanups.push(() => database.drop());
    const delivery = (run: { id: string; conversationId: string }, state: string, answer: string) =>
      ({
        runId: run.id,
        conversationId: run.conversationId,
        channel: "web",
        account: "default",
        target: "chat",
        state,
        text: answer,
      }) as AnswerDelivery;
    const start = async (owner: string, model: ReturnType<typeof createScriptedModel>) => {
      const store = await openPostgresRuntimeStore(database.url);
      const clock = new FakeClock();
      const logger = recordingLogger();
      const runtime = new Runtime({
        store,
        models: [{ label: "scripted", model }],
        readUsage: toUsage,
        clock,
        logger,
        owner,
        leaseMs: LEASE_MS,
        answerDelivery: delivery,
      });
      cleanups.push(async () => {
        await runtime.close({ gracePeriodMs: 0, forceTimeoutMs: 1000 });
        await store.close();
      });
      return { runtime, store, clock, logger };
    };
    // The active process's model is slow: 20 deltas a second apart (in its fake time).
    const slow = createScriptedModel([
      { type: "text", text: "the old owner's answer ".repeat(10), deltas: 20, delayMs: 1000 },
    ]);
    const active = await start("active", slow);
    const activeStore = instrument(active.store);
    const ticket = active.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") });
    const { runId } = await ticket.admission;
    const call = await slow.whenCalled(1);

    const standbyModel = createScriptedModel([{ type: "text", text: "the standby's answer" }]);
    const standby = await start("standby", standbyModel);
    await standby.runtime.recover({ takeOverLeases: true });
    await eventually(
      async () => (await standby.store.loadRun(runId))?.run.state === "completed",
      REACTION_MS,
      "the standby to answer",
    );
    expect(standbyModel.requests).toHaveLength(1);
    expect(call.aborted).toBe(false);
    const writesBeforeLoss = activeStore.writes.length;

    // The active process's next renewal finds the run taken.
    await active.clock.advance(INTERVAL_MS);
    await eventually(() => call.aborted, REACTION_MS, "the old owner's model call to be aborted");
    await eventually(() => activeStore.acquisitions > 1, REACTION_MS, "the old owner's execution to end");
    expect(events(active.logger, "run.lease_lost")).toMatchObject([{ runId, reason: "not_held" }]);
    expect(activeStore.writes.slice(writesBeforeLoss)).toEqual([]);

    const outbox = await queryDatabase<{ markdown: string }>(
      database.url,
      "SELECT markdown FROM outbox WHERE run_id = $1",
      [runId],
    );
    expect(outbox).toEqual([{ markdown: "the standby's answer" }]);
    expect((await ticket.result).text).toBe("the standby's answer");
  }, 30_000);
});
