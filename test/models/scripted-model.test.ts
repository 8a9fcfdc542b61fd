import { describe, expect, test } from "bun:test";
import { APICallError, generateText, type ModelMessage, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { toUsage } from "../../src/models/usage.ts";
import { createScriptedModel, type ScriptedModel } from "../support/llm/scripted-model.ts";

const lookupTool = tool({ inputSchema: z.object({ query: z.string() }) });

async function step(
  model: ScriptedModel,
  messages: ModelMessage[],
  options: { abortSignal?: AbortSignal; system?: string } = {},
) {
  const result = streamText({
    model,
    messages,
    tools: { lookup: lookupTool },
    stopWhen: stepCountIs(1),
    system: options.system,
    maxRetries: 0,
    abortSignal: options.abortSignal,
    onError: () => {},
  });
  const parts: Array<{ type: string; text?: string; error?: unknown }> = [];
  let thrown: unknown;
  try {
    for await (const part of result.fullStream) parts.push(part);
  } catch (error) {
    thrown = error;
  }
  return { result, parts, thrown, deltas: parts.flatMap((p) => (p.type === "text-delta" ? [p.text] : [])) };
}

describe("scripted model", () => {
  test("records every call's prompt, so a dropped input can be shown absent", async () => {
    const model = createScriptedModel([
      { type: "text", text: "first answer" },
      { type: "text", text: "second answer" },
    ]);
    await step(model, [{ role: "user", content: "superseded question" }]);
    await step(model, [{ role: "user", content: "the newer question" }], { system: "be brief" });

    expect(model.requests.map((r) => r.callIndex)).toEqual([0, 1]);
    expect(model.requests[0]?.lastUserText).toBe("superseded question");
    expect(model.requests[1]?.promptText).toBe("be brief\nthe newer question");
    expect(model.requests[1]?.promptText).not.toContain("superseded");
    expect(model.requests[1]?.prompt[0]).toEqual({ role: "system", content: "be brief" });
    expect(model.requests[1]?.toolNames).toEqual(["lookup"]);
  });

  test("streams a text turn in the given number of deltas and reports usage with cost", async () => {
    const model = createScriptedModel([
      {
        type: "text",
        text: "alpha beta gamma delta epsilon",
        deltas: 5,
        usage: { inputTokens: 11, outputTokens: 5, costUsd: 0.002 },
      },
      { type: "text", text: "no usage here", usage: "unavailable" },
    ]);
    const first = await step(model, [{ role: "user", content: "go" }]);
    expect(first.deltas).toEqual(["alpha ", "beta ", "gamma ", "delta ", "epsilon"]);
    expect(toUsage(await first.result.usage, await first.result.providerMetadata)).toEqual({
      inputTokens: 11,
      outputTokens: 5,
      costUsd: 0.002,
    });
    const second = await step(model, [{ role: "user", content: "go" }]);
    expect(toUsage(await second.result.usage, await second.result.providerMetadata)).toEqual({});
  });

  test("a function script sees the messages and call index; tool calls flow through the AI SDK", async () => {
    const model = createScriptedModel(({ messages, callIndex }) =>
      messages.at(-1)?.role === "tool"
        ? { type: "text", text: `answer after tool (call ${callIndex})` }
        : { type: "tool-call", toolName: "lookup", input: { query: "bun" }, text: "Let me check." },
    );
    const first = await step(model, [{ role: "user", content: "what is bun?" }]);
    expect(await first.result.finishReason).toBe("tool-calls");
    const [call] = await first.result.toolCalls;
    expect(call).toMatchObject({ toolCallId: "call_0", toolName: "lookup", input: { query: "bun" } });
    expect(first.deltas.join("")).toBe("Let me check.");

    const messages: ModelMessage[] = [
      { role: "user", content: "what is bun?" },
      ...(await first.result.response).messages,
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call_0",
            toolName: "lookup",
            output: { type: "text", value: "a JS runtime" },
          },
        ],
      },
    ];
    const second = await step(model, messages);
    expect(second.deltas.join("")).toBe("answer after tool (call 1)");
    expect(model.requests[1]?.promptText).toContain("a JS runtime");
  });

  test("an error turn before any delta rejects the call with a retryable APICallError", async () => {
    const model = createScriptedModel([{ type: "error", status: 503, message: "overloaded" }]);
    const { parts, deltas } = await step(model, [{ role: "user", content: "hi" }]);
    const error = parts.find((p) => p.type === "error")?.error;
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(503);
    expect((error as APICallError).isRetryable).toBe(true);
    expect(deltas).toEqual([]);
  });

  test("a retried call gets the next turn, as a runtime retry after an error turn would", async () => {
    const model = createScriptedModel([
      { type: "error", status: 500 },
      { type: "text", text: "recovered" },
    ]);
    const failed = await step(model, [{ role: "user", content: "hi" }]);
    expect(failed.parts.some((p) => p.type === "error")).toBe(true);
    const retried = await step(model, [{ role: "user", content: "hi" }]);
    expect(retried.deltas.join("")).toBe("recovered");
    expect(model.requests.map((r) => r.lastUserText)).toEqual(["hi", "hi"]);
  });

  test("an error turn after some deltas breaks the stream after them", async () => {
    const model = createScriptedModel([
      { type: "error", text: "partial answer that", deltas: 3, message: "connection reset" },
    ]);
    const { deltas, parts, thrown } = await step(model, [{ role: "user", content: "hi" }]);
    expect(deltas.join("")).toBe("partial answer that");
    const error = thrown ?? parts.find((p) => p.type === "error")?.error;
    expect((error as Error).message).toBe("connection reset");
  });

  test("a hang turn holds until the abort signal fires, then stops promptly", async () => {
    const model = createScriptedModel([{ type: "hang", text: "thinking" }]);
    const controller = new AbortController();
    const running = step(model, [{ role: "user", content: "hi" }], { abortSignal: controller.signal });
    await model.whenCalled(1);
    await Bun.sleep(50);
    const abortedAtMs = Date.now();
    controller.abort(new Error("superseded by a newer message"));
    const { deltas, parts } = await running;

    expect(Date.now() - abortedAtMs).toBeLessThan(500);
    expect(deltas.join("")).toBe("thinking");
    expect(parts.map((p) => p.type)).toContain("abort");
    expect(model.requests[0]?.aborted).toBe(true);
  }, 5_000);

  test("abort interrupts a slow text stream between deltas", async () => {
    const model = createScriptedModel([
      { type: "text", text: "one two three four five six", deltas: 6, delayMs: 40 },
    ]);
    const controller = new AbortController();
    const result = streamText({ model, prompt: "count", abortSignal: controller.signal, maxRetries: 0 });
    const deltas: string[] = [];
    for await (const part of result.fullStream) {
      if (part.type !== "text-delta") continue;
      deltas.push(part.text);
      if (deltas.length === 2) controller.abort();
    }
    expect(deltas).toEqual(["one ", "two "]);
    expect(model.requests[0]?.aborted).toBe(true);
  }, 5_000);

  test("its own stream errors with the abort reason without waiting out the delta delay", async () => {
    const model = createScriptedModel([{ type: "text", text: "one two three", deltas: 3, delayMs: 1_000 }]);
    const controller = new AbortController();
    const { stream } = await model.doStream({
      prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      abortSignal: controller.signal,
    });
    const reader = stream.getReader();
    expect((await reader.read()).value?.type).toBe("stream-start");
    expect((await reader.read()).value?.type).toBe("text-start");
    const pending = reader.read();
    const reason = new Error("stop now");
    const abortedAtMs = Date.now();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - abortedAtMs).toBeLessThan(200);
  }, 5_000);

  test("a call the queue has no turn for fails with a message that says so", async () => {
    const model = createScriptedModel([]);
    const { parts } = await step(model, [{ role: "user", content: "anyone there?" }]);
    const error = parts.find((p) => p.type === "error")?.error as Error;
    expect(error.message).toContain(
      'scripted model: no turn left for call 1 (last user text: "anyone there?")',
    );
    model.push({ type: "text", text: "now there is" });
    expect((await step(model, [{ role: "user", content: "again" }])).deltas.join("")).toBe("now there is");
  });

  test("generateText works too (doGenerate)", async () => {
    const model = createScriptedModel([
      { type: "text", text: "whole answer", usage: { inputTokens: 3, outputTokens: 2 } },
    ]);
    const result = await generateText({ model, prompt: "hi" });
    expect(result.text).toBe("whole answer");
    expect(result.usage.inputTokens).toBe(3);
    expect(model.requests[0]?.aborted).toBe(false);
  });
});
