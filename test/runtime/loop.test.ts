import { afterEach, describe, expect, test } from "bun:test";
import { tool } from "ai";
import { z } from "zod";
import type { RuntimeEvent } from "../../src/runtime/events.ts";
import type { MessagePart } from "../../src/runtime/types.ts";
import { createScriptedModel } from "../support/llm/scripted-model.ts";
import { createHarness, type RuntimeHarness, text } from "../support/runtime.ts";

let harness: RuntimeHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const noteTool = () => ({
  note: tool({
    description: "note",
    inputSchema: z.object({ text: z.string() }),
    execute: async ({ text }) => ({ noted: text }),
  }),
});

describe("the step loop", () => {
  test("each step is persisted before the next; tool results reach the next step", async () => {
    harness = createHarness(
      [
        {
          type: "tool-call",
          toolName: "note",
          input: { text: "alpha" },
          usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.001 },
        },
        { type: "text", text: "done", usage: { inputTokens: 12, outputTokens: 1, costUsd: 0.002 } },
      ],
      { tools: noteTool },
    );
    const checkpoints: number[] = [];
    harness.runtime.subscribe((e) => {
      if (e.type === "checkpoint") checkpoints.push(e.step);
    });
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") })
      .result;
    expect(r.state).toBe("completed");
    expect(checkpoints).toEqual([0, 1]);
    expect(harness.model.requests[1]!.promptText).toContain("alpha");
    expect(r.usage).toEqual({ inputTokens: 22, outputTokens: 3, costUsd: 0.003 });
    expect(r.costComplete).toBe(true);
    const steps = harness.stores.db.query("SELECT step, finish_reason FROM steps ORDER BY step").all();
    expect(steps).toEqual([
      { step: 0, finish_reason: "tool-calls" },
      { step: 1, finish_reason: "stop" },
    ]);
  });

  test("the answering step is saved in the run's terminal commit: one write, not a checkpoint and then the end", async () => {
    harness = createHarness(
      [
        { type: "tool-call", toolName: "note", input: { text: "alpha" } },
        { type: "text", text: "done", usage: { inputTokens: 12, outputTokens: 1, costUsd: 0.002 } },
      ],
      { tools: noteTool },
    );
    const store = harness.stores.runtime;
    const writes: string[] = [];
    const checkpoint = store.checkpoint.bind(store);
    const commitTerminal = store.commitTerminal.bind(store);
    store.checkpoint = (request) => {
      writes.push(`checkpoint ${request.step.step}`);
      return checkpoint(request);
    };
    store.commitTerminal = (request) => {
      writes.push(`terminal ${request.state} with step ${request.finalStep?.step.step ?? "none"}`);
      return commitTerminal(request);
    };
    const events: string[] = [];
    harness.runtime.subscribe((e) => {
      if (e.type === "checkpoint" || e.type === "terminal") events.push(e.type);
    });
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") })
      .result;
    expect(r.state).toBe("completed");
    expect(writes).toEqual(["checkpoint 0", "terminal completed with step 1"]);
    // Observers still see each step's checkpoint, in order, before the end.
    expect(events).toEqual(["checkpoint", "checkpoint", "terminal"]);
    const steps = harness.stores.db.query("SELECT step, finish_reason FROM steps ORDER BY step").all();
    expect(steps).toEqual([
      { step: 0, finish_reason: "tool-calls" },
      { step: 1, finish_reason: "stop" },
    ]);
  });

  test("unavailable usage is not zero: one silent step makes the cost unavailable", async () => {
    harness = createHarness(
      [
        {
          type: "tool-call",
          toolName: "note",
          input: { text: "a" },
          usage: { inputTokens: 5, outputTokens: 1, costUsd: 0.5 },
        },
        { type: "text", text: "done", usage: "unavailable" },
      ],
      { tools: noteTool },
    );
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("go") })
      .result;
    expect(r.usage.costUsd).toBeUndefined();
    expect(r.usage.inputTokens).toBeUndefined();
    expect(r.costComplete).toBe(false);
  });

  test("the step ceiling ends the run policy_stop", async () => {
    harness = createHarness(() => ({ type: "tool-call", toolName: "note", input: { text: "again" } }), {
      tools: noteTool,
      loop: { maxSteps: 3 },
    });
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("loop") })
      .result;
    expect(r.state).toBe("policy_stop");
    expect(r.error).toContain("step ceiling of 3");
    expect(harness.model.requests.length).toBe(3);
  });

  test("a named stop policy ends the run policy_stop between steps", async () => {
    harness = createHarness(() => ({ type: "tool-call", toolName: "note", input: { text: "x" } }), {
      tools: noteTool,
      loop: {
        stopPolicies: [
          { name: "two-tools", when: ({ parts }) => parts.filter((p) => p.type === "tool-call").length >= 2 },
        ],
      },
    });
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") })
      .result;
    expect(r.state).toBe("policy_stop");
    expect(r.error).toBe("stop policy two-tools");
  });

  test("provider silence beyond idleTimeoutMs ends the run timeout", async () => {
    harness = createHarness([{ type: "hang", text: "thinking" }], { loop: { idleTimeoutMs: 150 } });
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") })
      .result;
    expect(r.state).toBe("timeout");
    expect(r.text).toBe("thinking");
  });

  test("a failed stream is retried, subscribers get attempt-reset, then the fallback model answers", async () => {
    const fallback = createScriptedModel([{ type: "text", text: "from the fallback" }]);
    harness = createHarness(
      [
        { type: "error", text: "half an ans", status: 500 },
        { type: "error", status: 503 },
      ],
      {
        extraModels: [{ label: "fallback", model: fallback }],
        loop: { retry: { attemptsPerModel: 2, baseDelayMs: 10, maxDelayMs: 20 } },
      },
    );
    const events: RuntimeEvent[] = [];
    harness.runtime.subscribe((e) => events.push(e));
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") })
      .result;
    expect(r.state).toBe("completed");
    expect(r.text).toBe("from the fallback");
    expect(harness.model.requests.length).toBe(2);
    expect(fallback.requests.length).toBe(1);
    const resets = events.filter((e) => e.type === "attempt-reset");
    expect(resets.length).toBe(2);
    const firstReset = events.findIndex((e) => e.type === "attempt-reset");
    const firstDelta = events.findIndex((e) => e.type === "assistant-delta");
    expect(firstDelta).toBeLessThan(firstReset);
    const sequences = events.filter((e) => !e.durable).map((e) => (e as { sequence: number }).sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
  });

  test("a stream that fails after a tool call is not replayed", async () => {
    harness = createHarness(
      [
        { type: "tool-call", toolName: "note", input: { text: "side effect" } },
        { type: "error", status: 500 },
      ],
      { tools: noteTool, loop: { retry: { attemptsPerModel: 3, baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    const r = await harness.runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") })
      .result;
    // The tool step completed and was persisted; the failed second step is retried because it had no tool call of its own.
    expect(harness.model.requests.length).toBe(4);
    expect(r.state).toBe("failed");
  });

  test("follow() gives the snapshot first, then live events, without gaps", async () => {
    harness = createHarness([
      { type: "text", text: "one" },
      { type: "text", text: "two two", deltas: 2, delayMs: 30 },
    ]);
    const { runtime } = harness;
    await runtime.submit({ conversationId: "c", idempotencyKey: "a", parts: text("a") }).result;
    const abort = new AbortController();
    const seen: RuntimeEvent[] = [];
    const following = (async () => {
      for await (const event of runtime.follow("c", 0, abort.signal)) {
        seen.push(event);
        if (event.type === "terminal" && event.text === "two two") abort.abort();
      }
    })();
    await runtime.submit({ conversationId: "c", idempotencyKey: "b", parts: text("b") }).result;
    await following;
    const durable = seen.filter((e) => e.durable).map((e) => (e as { seq: number }).seq);
    expect(durable).toEqual(Array.from({ length: durable.length }, (_, i) => i + 1));
    expect(seen.some((e) => e.type === "assistant-delta" && e.delta.includes("two"))).toBe(true);
    expect(seen.filter((e) => e.type === "terminal").map((e) => (e as { text: string }).text)).toEqual([
      "one",
      "two two",
    ]);
  });

  test("a ticket's result costs nothing until read, and read after the run ended it still resolves", async () => {
    harness = createHarness([{ type: "text", text: "late but here" }]);
    const { runtime, stores } = harness;
    const loadRun = stores.runtime.loadRun.bind(stores.runtime);
    let loads = 0;
    stores.runtime.loadRun = (runId) => {
      loads += 1;
      return loadRun(runId);
    };
    const ended = new Promise<void>((resolve) =>
      runtime.subscribe((e) => {
        if (e.type === "terminal") resolve();
      }),
    );
    const ticket = runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") });
    await ended;
    await runtime.close({ gracePeriodMs: 1000 });
    expect(loads).toBe(0);
    const outcome = await ticket.result;
    expect(outcome).toMatchObject({ state: "completed", text: "late but here" });
    expect(outcome.runId).toBe((await ticket.admission).runId);
  });

  test("close() reports what it achieved", async () => {
    harness = createHarness([{ type: "hang", text: "never ends" }]);
    const { runtime, model, stores } = harness;
    const ticket = runtime.submit({ conversationId: "c", idempotencyKey: "k", parts: text("x") });
    await model.whenCalled(1);
    const closed = await runtime.close({ gracePeriodMs: 50, forceTimeoutMs: 2000 });
    expect(closed).toEqual({ settled: true, timedOut: false, remaining: 0 });
    // Released, not ended: the next start resumes it.
    const run = (await stores.runtime.loadRun((await ticket.admission).runId))!.run;
    expect(run.state).toBe("queued");
    expect(() =>
      runtime.submit({ conversationId: "c", idempotencyKey: "k2", parts: text("y") }),
    ).not.toThrow();
    await expect(
      runtime.submit({ conversationId: "c", idempotencyKey: "k2", parts: text("y") }).admission,
    ).rejects.toMatchObject({
      code: "runtime_closed",
    });
  });
});

describe("lanes", () => {
  test("a conversation keeps its lane only while it has work", async () => {
    harness = createHarness(Array.from({ length: 21 }, (_, i) => ({ type: "text" as const, text: `a${i}` })));
    const results = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          harness!.runtime.submit({ conversationId: `c${i}`, idempotencyKey: "k", parts: text("hi") }).result,
      ),
    );
    expect(results.every((r) => r.state === "completed")).toBe(true);
    await Bun.sleep(10);
    expect(harness.runtime.lanesHeld).toBe(0);
    const again = await harness.runtime.submit({
      conversationId: "c3",
      idempotencyKey: "k2",
      parts: text("more"),
    }).result;
    expect(again.state).toBe("completed");
  });
});

describe("resuming a run whose last step was saved before a crash", () => {
  /** A run of conversation c whose owner died right after saving step 0 with `finishReason`. */
  async function savedBeforeCrash(h: RuntimeHarness, parts: MessagePart[], finishReason: string) {
    const store = h.stores.runtime;
    const now = Date.now();
    const admitted = await store.admit({
      conversation: { id: "c" },
      idempotencyKey: "k",
      fingerprint: "fp",
      parts: text("go"),
      context: null,
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: "run_saved", messageId: "msg_saved" },
      nowMs: now,
    });
    const acquired = await store.acquireRun({
      runId: admitted.runId,
      owner: "dead",
      nowMs: now,
      leaseMs: 60_000,
    });
    await store.checkpoint({
      fence: acquired!.fence,
      assistantParts: parts,
      step: { step: 0, model: "scripted", finishReason, usage: {}, startedAtMs: now, finishedAtMs: now },
      joinedInputIds: [],
      nowMs: now,
    });
    await h.runtime.recover({ takeOverLeases: true });
    const ended = async () => {
      const view = await store.loadRun(admitted.runId);
      return view && !["queued", "running"].includes(view.run.state) ? view : undefined;
    };
    for (let waited = 0; waited < 5_000; waited += 20) {
      const view = await ended();
      if (view) return view;
      await Bun.sleep(20);
    }
    throw new Error("the resumed run did not end within 5 s");
  }

  test("one cut at the length limit (its last part reasoning) ends with what it saved; the model is not asked again", async () => {
    harness = createHarness([{ type: "text", text: "asked again" }]);
    const view = await savedBeforeCrash(
      harness,
      [
        { type: "text", text: "The answer is" },
        { type: "reasoning", text: "and then" },
      ],
      "length",
    );
    expect(view.run.state).toBe("completed");
    expect(harness.model.requests).toHaveLength(0);
    expect(view.answer?.parts).toContainEqual({ type: "text", text: "The answer is" });
  });

  test("one that wrote text and called a tool goes on: the tool runs, the model is asked with its result", async () => {
    harness = createHarness([{ type: "text", text: "all noted" }], { tools: noteTool });
    const view = await savedBeforeCrash(
      harness,
      [
        { type: "tool-call", toolCallId: "call-1", toolName: "note", input: { text: "alpha" } },
        { type: "text", text: "Noting it." },
      ],
      "tool-calls",
    );
    expect(view.run.state).toBe("completed");
    expect(harness.model.requests).toHaveLength(1);
    expect(harness.model.requests[0]!.promptText).toContain("alpha");
  });
});
