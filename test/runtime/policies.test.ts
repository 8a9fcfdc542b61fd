import { afterEach, describe, expect, test } from "bun:test";
import { INTERRUPTED_MARKER } from "../../src/runtime/project.ts";
import type { Script } from "../support/llm/scripted-model.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { createEngineHarness, ENGINES, type EngineHarness, text } from "../support/runtime.ts";

useTestServer();

let harness: EngineHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const slow = (value: string, delayMs = 40) => ({ type: "text" as const, text: value, deltas: 4, delayMs });

for (const engine of ENGINES) {
  const createHarness = (script: Script, options?: Parameters<typeof createEngineHarness>[2]) =>
    createEngineHarness(engine, script, options);

  describe(engine, () => {
    describe("input policies", () => {
      test("queue: both inputs answered, in order, the second seeing the first answer", async () => {
        harness = await createHarness([slow("first answer here now"), slow("second answer")], {
          inputPolicy: "queue",
        });
        const { runtime, model } = harness;
        const a = runtime.submit({ conversationId: "c1", idempotencyKey: "a", parts: text("question one") });
        await a.admission;
        const b = runtime.submit({ conversationId: "c1", idempotencyKey: "b", parts: text("question two") });
        const [ra, rb] = await Promise.all([a.result, b.result]);
        expect(ra.state).toBe("completed");
        expect(ra.text).toBe("first answer here now");
        expect(rb.state).toBe("completed");
        expect(model.requests.length).toBe(2);
        expect(model.requests[0]!.promptText).not.toContain("question two");
        expect(model.requests[1]!.promptText).toContain("first answer here now");
        expect(model.requests[1]!.lastUserText).toBe("question two");
      });

      test("supersede: the first ends superseded and is absent from the second prompt", async () => {
        harness = await createHarness(
          [{ type: "hang", text: "partial of the first" }, slow("answer to the second")],
          {
            inputPolicy: "supersede",
          },
        );
        const { runtime, model } = harness;
        const a = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "a",
          parts: text("obsolete question"),
        });
        await model.whenCalled(1);
        const b = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "b",
          parts: text("newer question"),
        });
        const [ra, rb] = await Promise.all([a.result, b.result]);
        expect(ra.state).toBe("superseded");
        expect(rb.state).toBe("completed");
        expect(rb.text).toBe("answer to the second");
        const second = model.requests[1]!.promptText;
        expect(second).not.toContain("obsolete question");
        expect(second).not.toContain("partial of the first");
        const view = await harness.store.loadRun(ra.runId);
        expect(view?.answer?.status).toBe("superseded");
      });

      test("supersede ends a queued run that never started", async () => {
        harness = await createHarness([{ type: "hang", text: "x" }, slow("c answer")], {
          inputPolicy: "supersede",
        });
        const { runtime, model } = harness;
        const a = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "a",
          parts: text("a"),
          policy: "queue",
        });
        await model.whenCalled(1);
        const b = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "b",
          parts: text("b"),
          policy: "queue",
        });
        await b.admission;
        const c = runtime.submit({ conversationId: "c1", idempotencyKey: "c", parts: text("c") });
        const [ra, rb, rc] = await Promise.all([a.result, b.result, c.result]);
        expect([ra.state, rb.state, rc.state]).toEqual(["superseded", "superseded", "completed"]);
        expect(model.requests.length).toBe(2);
      });

      test("interrupt: the partial reaches the model marked as interrupted", async () => {
        harness = await createHarness(
          [{ type: "hang", text: "We are the team, where would you like" }, slow("ok")],
          {
            inputPolicy: "interrupt",
          },
        );
        const { runtime, model } = harness;
        const a = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "a",
          parts: text("tell me about you"),
        });
        await model.whenCalled(1);
        await Bun.sleep(30);
        const b = runtime.submit({ conversationId: "c1", idempotencyKey: "b", parts: text("stop, go on") });
        const [ra, rb] = await Promise.all([a.result, b.result]);
        expect(ra.state).toBe("interrupted");
        expect(ra.text).toBe("We are the team, where would you like");
        expect(rb.state).toBe("completed");
        const prompt = model.requests[1]!.promptText;
        expect(prompt).toContain("tell me about you");
        expect(prompt).toContain("We are the team, where would you like");
        expect(prompt).toContain(INTERRUPTED_MARKER);
      });

      test("interrupt-next runs before an ordinary queued run", async () => {
        harness = await createHarness(
          (call) =>
            call.callIndex === 0
              ? { type: "hang", text: "working" }
              : { type: "text", text: `answer ${call.callIndex}` },
          { inputPolicy: "queue" },
        );
        const { runtime, model } = harness;
        const a = runtime.submit({ conversationId: "c1", idempotencyKey: "a", parts: text("A") });
        await model.whenCalled(1);
        const b = runtime.submit({ conversationId: "c1", idempotencyKey: "b", parts: text("B ordinary") });
        await b.admission;
        const c = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "c",
          parts: text("C urgent"),
          policy: "interrupt-next",
        });
        const [ra, rb, rc] = await Promise.all([a.result, b.result, c.result]);
        expect(ra.state).toBe("interrupted");
        expect(rb.state).toBe("completed");
        expect(rc.state).toBe("completed");
        expect(model.requests.map((r) => r.lastUserText)).toEqual(["A", "C urgent", "B ordinary"]);
      });

      test("inject: a new input joins the running loop at its next step and its run ends absorbed", async () => {
        let release: () => void = () => {};
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        const { tool } = await import("ai");
        const { z } = await import("zod");
        harness = await createHarness(
          [
            { type: "tool-call", toolName: "lookup", input: { q: "thread" } },
            slow("summary in bullet points"),
          ],
          {
            inputPolicy: "inject",
            tools: () => ({
              lookup: tool({
                description: "look something up",
                inputSchema: z.object({ q: z.string() }),
                execute: async () => {
                  await gate;
                  return { found: "ten messages" };
                },
              }),
            }),
          },
        );
        const { runtime, model } = harness;
        const a = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "a",
          parts: text("summarise this thread"),
        });
        await model.whenCalled(1);
        const b = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "b",
          parts: text("actually, in bullet points"),
        });
        await b.admission;
        release();
        const [ra, rb] = await Promise.all([a.result, b.result]);
        expect(ra.state).toBe("completed");
        expect(rb.state).toBe("absorbed");
        expect(rb.answeredBy).toBe(ra.runId);
        expect(rb.text).toBe("summary in bullet points");
        expect(model.requests.length).toBe(2);
        const second = model.requests[1]!;
        expect(second.lastUserText).toBe("actually, in bullet points");
        expect(second.promptText).toContain("ten messages");
      });

      test("coalescePending: two waiting inputs share one successor and both tickets resolve to it", async () => {
        harness = await createHarness([slow("first", 60), slow("batched answer")], {
          inputPolicy: "queue",
          coalescePending: true,
        });
        const { runtime, model } = harness;
        const a = runtime.submit({ conversationId: "c1", idempotencyKey: "a", parts: text("one") });
        await model.whenCalled(1);
        const b = runtime.submit({ conversationId: "c1", idempotencyKey: "b", parts: text("two") });
        const c = runtime.submit({ conversationId: "c1", idempotencyKey: "c", parts: text("three") });
        const [admB, admC] = await Promise.all([b.admission, c.admission]);
        // Submitted together, either may commit first (on PostgreSQL they are two transactions):
        // the first starts the successor, the other joins it.
        expect([admB.outcome, admC.outcome].sort()).toEqual(["admitted", "coalesced"]);
        expect(admC.runId).toBe(admB.runId);
        const [ra, rb, rc] = await Promise.all([a.result, b.result, c.result]);
        expect(ra.text).toBe("first");
        expect(rb.runId).toBe(rc.runId);
        expect(rb.text).toBe("batched answer");
        expect(model.requests.length).toBe(2);
        expect(model.requests[1]!.promptText).toContain("two");
        expect(model.requests[1]!.promptText).toContain("three");
      });
    });

    describe("admission", () => {
      test("the same key returns the same run and answer without a model call; other input is a conflict", async () => {
        harness = await createHarness([slow("only once")]);
        const { runtime, model } = harness;
        const first = runtime.submit({ conversationId: "c1", idempotencyKey: "k", parts: text("hi") });
        const r1 = await first.result;
        const again = runtime.submit({ conversationId: "c1", idempotencyKey: "k", parts: text("hi") });
        const adm = await again.admission;
        expect(adm.outcome).toBe("duplicate");
        expect(adm.runId).toBe(r1.runId);
        expect((await again.result).text).toBe("only once");
        expect(model.requests.length).toBe(1);
        const conflict = runtime.submit({
          conversationId: "c1",
          idempotencyKey: "k",
          parts: text("something else"),
        });
        await expect(conflict.admission).rejects.toMatchObject({ code: "idempotency_conflict" });
      });

      test("interrupt() commits the stop durably before aborting", async () => {
        harness = await createHarness([{ type: "hang", text: "long answer" }]);
        const { runtime, model, store } = harness;
        const a = runtime.submit({ conversationId: "c1", idempotencyKey: "a", parts: text("go") });
        await model.whenCalled(1);
        await Bun.sleep(20);
        expect(await runtime.interrupt({ conversationId: "c1" })).toBe(true);
        const r = await a.result;
        expect(r.state).toBe("interrupted");
        const events = await store.readEvents("c1", 0, 100);
        const states = events
          .filter((e) => e.type === "run-state")
          .map((e) => (e as { state: string }).state);
        expect(states).toContain("interrupt_requested");
      });
    });
  });
}
