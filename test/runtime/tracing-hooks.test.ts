/**
 * The runtime's tracing hooks on both engines: admission stores the trace context it is given
 * with the run, each execution gets the run with it, and steps and tool calls are reported in
 * order with their outcomes. A recording tracer stands in for OpenTelemetry (src/telemetry).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { tool } from "ai";
import { z } from "zod";
import type { RunRecord } from "../../src/runtime/store.ts";
import { type RunTracing, traceParentOf } from "../../src/runtime/tracing.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { createEngineHarness, ENGINES, type EngineHarness, text } from "../support/runtime.ts";

useTestServer();

const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

function recordingTracer() {
  const calls: string[] = [];
  const executed: RunRecord[] = [];
  const tracing: RunTracing = {
    async admission(admit) {
      const result = await admit(TRACEPARENT);
      calls.push(`admission ${result.outcome}`);
      return result;
    },
    execution(run) {
      executed.push(run);
      calls.push(`execution ${run.fencingToken}`);
      return {
        within: (fn) => fn(),
        step(index) {
          calls.push(`step ${index}`);
          return {
            sdkTelemetry: { isEnabled: false },
            within: (fn) => fn(),
            end: (outcome) => void calls.push(`step ${index} ${outcome.kind}`),
          };
        },
        decisions: () => void calls.push("decisions"),
        toolCall(call, attempt) {
          calls.push(`tool ${call.toolName} ${attempt}`);
          return {
            within: (fn) => fn(),
            end: (result) => void calls.push(`tool ${call.toolName} ${result.outcome}`),
          };
        },
        end: (end) => void calls.push(`end ${end.kind === "terminal" ? end.state : end.kind}`),
      };
    },
  };
  return { tracing, calls, executed };
}

const noteTool = () => ({
  note: tool({
    description: "note",
    inputSchema: z.object({ text: z.string() }),
    execute: async ({ text }) => ({ noted: text }),
  }),
});

for (const engine of ENGINES) {
  describe(engine, () => {
    let harness: EngineHarness | undefined;
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    test("the trace context is stored with the run and handed to its execution; steps and tools are reported", async () => {
      const { tracing, calls, executed } = recordingTracer();
      harness = await createEngineHarness(
        engine,
        [
          { type: "tool-call", toolName: "note", input: { text: "alpha" } },
          { type: "text", text: "done" },
        ],
        { tracing, tools: noteTool },
      );
      const ticket = harness.runtime.submit({
        conversationId: "c",
        idempotencyKey: "k",
        parts: text("go"),
        context: { channel: "telegram", surface: "dm" },
      });
      const admission = await ticket.admission;
      expect((await ticket.result).state).toBe("completed");
      const stored = await harness.store.loadRun(admission.runId);
      expect(traceParentOf(stored?.run.context)).toBe(TRACEPARENT);
      expect(stored?.run.context).toMatchObject({ channel: "telegram", surface: "dm" });
      expect(executed.map((run) => traceParentOf(run.context))).toEqual([TRACEPARENT]);
      expect(calls).toEqual([
        "admission admitted",
        "execution 1",
        "step 0",
        "step 0 ok",
        "tool note 1",
        "tool note completed",
        "step 1",
        "step 1 ok",
        "end completed",
      ]);
    });

    test("a run without a context object keeps none: nothing is invented for it", async () => {
      const { tracing, executed } = recordingTracer();
      harness = await createEngineHarness(engine, [{ type: "text", text: "hi" }], { tracing });
      const ticket = harness.runtime.submit({
        conversationId: "c2",
        idempotencyKey: "k2",
        parts: text("go"),
      });
      expect((await ticket.result).state).toBe("completed");
      expect(executed[0]?.context).toBeNull();
    });
  });
}
