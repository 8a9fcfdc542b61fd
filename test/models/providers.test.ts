import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { APICallError, type LanguageModel, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { createModelRegistry } from "../../src/models/registry.ts";
import { toUsage } from "../../src/models/usage.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";

/*
 * Both HTTP providers, end to end through the AI SDK's streamText against the fake
 * OpenAI-compatible server, the way the runtime calls them: one step at a time.
 */

const server = startFakeLlmServer();
afterAll(() => server.stop());
beforeEach(() => server.reset());

const providers = [
  {
    spec: "openrouter:vendor/model-a",
    path: "/api/v1/chat/completions",
    // OpenRouter's provider turns a broken stream into an error part and finishes with "error".
    droppedStream: "error-part",
  },
  {
    spec: "openai-compatible:model-b",
    path: "/v1/chat/completions",
    // The openai-compatible provider lets the broken stream throw out of fullStream.
    droppedStream: "thrown",
  },
] as const;

function modelFor(spec: string): LanguageModel {
  return createModelRegistry({
    SWITCHBOARD_MODEL: spec,
    OPENROUTER_API_KEY: "test-router-key",
    OPENROUTER_BASE_URL: server.openrouterBaseUrl,
    OPENAI_COMPATIBLE_BASE_URL: server.openaiBaseUrl,
  }).chain[0].model;
}

const weatherTool = tool({
  description: "Current weather for a city",
  inputSchema: z.object({ city: z.string(), unit: z.enum(["celsius", "fahrenheit"]) }),
});

async function runStep(model: LanguageModel, userText: string) {
  const result = streamText({
    model,
    messages: [{ role: "user", content: userText }],
    tools: { getWeather: weatherTool },
    stopWhen: stepCountIs(1),
    maxRetries: 0,
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

describe.each(providers)("$spec through streamText", ({ spec, path, droppedStream }) => {
  test("streams text deltas and reports usage and cost through toUsage", async () => {
    server.setRules([
      {
        match: { lastUserContains: "haiku" },
        reply: {
          kind: "text",
          text: "Quiet loopback port, packets fall like autumn leaves, the echo replies.",
          chunks: 5,
          usage: {
            promptTokens: 21,
            completionTokens: 17,
            cachedTokens: 4,
            reasoningTokens: 3,
            costUsd: 0.000415,
          },
        },
      },
    ]);
    const { result, deltas } = await runStep(modelFor(spec), "write a haiku");

    expect(deltas).toHaveLength(5);
    expect(deltas.join("")).toBe("Quiet loopback port, packets fall like autumn leaves, the echo replies.");
    expect(await result.finishReason).toBe("stop");
    expect(toUsage(await result.usage, await result.providerMetadata)).toEqual({
      inputTokens: 21,
      outputTokens: 17,
      cachedInputTokens: 4,
      reasoningTokens: 3,
      costUsd: 0.000415,
    });
    const [request] = server.requests();
    expect(request?.path).toBe(path);
    expect(request?.body.stream_options).toEqual({ include_usage: true });
  });

  test("reports what the server left out as unavailable, never 0", async () => {
    server.setRules([
      { reply: { kind: "text", text: "ok", usage: { promptTokens: 9, completionTokens: 1 } } },
    ]);
    const { result } = await runStep(modelFor(spec), "anything");
    expect(toUsage(await result.usage, await result.providerMetadata)).toEqual({
      inputTokens: 9,
      outputTokens: 1,
    });
  });

  test("reports no usage at all when the server sends none", async () => {
    server.setRules([{ reply: { kind: "text", text: "ok", usage: false } }]);
    const { result } = await runStep(modelFor(spec), "anything");
    expect(toUsage(await result.usage, await result.providerMetadata)).toEqual({});
  });

  test("streams a tool call whose input the zod schema validates", async () => {
    server.setRules([
      {
        match: { lastUserContains: "weather" },
        reply: {
          kind: "tool-call",
          toolName: "getWeather",
          input: { city: "Reykjavík", unit: "celsius" },
          argumentChunks: 4,
          usage: { costUsd: 0.0001 },
        },
      },
    ]);
    const { result, parts } = await runStep(modelFor(spec), "what's the weather in Reykjavík?");

    expect(parts.filter((p) => p.type === "tool-input-delta").length).toBeGreaterThanOrEqual(2);
    expect(await result.finishReason).toBe("tool-calls");
    const toolCalls = await result.toolCalls;
    expect(toolCalls).toHaveLength(1);
    expect(toolCalls[0]?.toolName).toBe("getWeather");
    expect(toolCalls[0]?.input).toEqual({ city: "Reykjavík", unit: "celsius" });
    expect(toolCalls[0]?.invalid).toBeFalsy();
    expect(toUsage(await result.usage, await result.providerMetadata).costUsd).toBe(0.0001);
    expect(server.requests()[0]?.toolNames).toEqual(["getWeather"]);
    const assistant = (await result.response).messages[0];
    expect(assistant?.role).toBe("assistant");
  });

  test("an HTTP 500 surfaces as a retryable APICallError", async () => {
    server.setRules([{ reply: { kind: "http-error", status: 500, message: "upstream exploded" } }]);
    const { parts, thrown } = await runStep(modelFor(spec), "hello");

    expect(thrown).toBeUndefined();
    const error = parts.find((p) => p.type === "error")?.error;
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(500);
    expect((error as APICallError).isRetryable).toBe(true);
    expect((error as APICallError).message).toContain("upstream exploded");
    expect(server.requests()).toHaveLength(1);
  });

  test("a 429 carries the server's Retry-After header", async () => {
    server.setRules([{ reply: { kind: "http-error", status: 429, retryAfterSeconds: 7 } }]);
    const { parts } = await runStep(modelFor(spec), "hello");
    const error = parts.find((p) => p.type === "error")?.error as APICallError;
    expect(error.statusCode).toBe(429);
    expect(error.responseHeaders?.["retry-after"]).toBe("7");
  });

  test(`a connection dropped mid-stream surfaces as ${droppedStream === "thrown" ? "a thrown error" : "an error part"}`, async () => {
    server.setRules([
      { reply: { kind: "text", text: "one two three four five", chunks: 5, dropAfterChunks: 2 } },
    ]);
    const { parts, thrown, deltas } = await runStep(modelFor(spec), "hello");

    expect(deltas.join("")).toBe("one two ");
    if (droppedStream === "thrown") {
      expect(thrown).toBeInstanceOf(Error);
    } else {
      expect(thrown).toBeUndefined();
      expect(parts.some((p) => p.type === "error")).toBe(true);
    }
  });
});
