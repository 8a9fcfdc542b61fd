import { afterEach, beforeEach, expect, test } from "bun:test";
import { registerTelemetry } from "ai";
import { toUsage } from "../../src/models/usage.ts";
import { modelSummarizer } from "../../src/runtime/compaction.ts";
import { DEFAULT_RETRY } from "../../src/runtime/retry.ts";
import { runStep } from "../../src/runtime/step.ts";
import { systemClock } from "../../src/util/clock.ts";
import { createScriptedModel } from "../support/llm/scripted-model.ts";

// Every call of ours runs with the AI SDK's telemetry off (it copied and redacted the whole prompt
// for each call): an integration registered in the process hears nothing from them.
const registry = globalThis as { AI_SDK_TELEMETRY_INTEGRATIONS?: unknown[] };
let saved: unknown[] | undefined;
const heard: string[] = [];

beforeEach(() => {
  saved = registry.AI_SDK_TELEMETRY_INTEGRATIONS;
  registry.AI_SDK_TELEMETRY_INTEGRATIONS = [];
  heard.length = 0;
  registerTelemetry({
    onStart: () => void heard.push("start"),
    onLanguageModelCallStart: () => void heard.push("model call"),
    onStepEnd: () => void heard.push("step end"),
  });
});

afterEach(() => {
  registry.AI_SDK_TELEMETRY_INTEGRATIONS = saved;
});

test("a step's model call reaches no telemetry integration", async () => {
  const model = createScriptedModel([{ type: "text", text: "hello there" }]);
  const outcome = await runStep({
    conversationId: "conv_telemetry",
    runId: "run_telemetry",
    instructions: "Be brief.",
    messages: [{ role: "user", content: "hi" }],
    tools: undefined,
    models: [{ label: "scripted", model }],
    retry: DEFAULT_RETRY,
    idleTimeoutMs: 10_000,
    signal: new AbortController().signal,
    clock: systemClock,
    readUsage: toUsage,
    emit: () => {},
    nextSequence: () => 0,
  });
  expect(outcome.kind).toBe("ok");
  expect(model.requests).toHaveLength(1);
  expect(heard).toEqual([]);
});

test("a compaction summary's call reaches no telemetry integration", async () => {
  const model = createScriptedModel([{ type: "text", text: "They talked about the weather." }]);
  const summary = await modelSummarizer({ label: "scripted", model })({
    previousSummary: null,
    turns: [{ role: "user", content: "It rains." }],
    signal: new AbortController().signal,
  });
  expect(summary).toContain("weather");
  expect(heard).toEqual([]);
});
