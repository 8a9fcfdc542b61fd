import { describe, expect, test } from "bun:test";
import type { LanguageModelUsage } from "ai";
import { toUsage } from "../../src/models/usage.ts";

function stepUsage(fields: {
  input?: number;
  output?: number;
  cacheRead?: number;
  reasoning?: number;
  raw?: Record<string, unknown>;
}): LanguageModelUsage {
  return {
    inputTokens: fields.input,
    inputTokenDetails: {
      noCacheTokens: undefined,
      cacheReadTokens: fields.cacheRead,
      cacheWriteTokens: undefined,
    },
    outputTokens: fields.output,
    outputTokenDetails: { textTokens: undefined, reasoningTokens: fields.reasoning },
    totalTokens: undefined,
    raw: fields.raw as LanguageModelUsage["raw"],
  };
}

describe("toUsage", () => {
  test("nothing reported: every field absent", () => {
    expect(toUsage(undefined, undefined)).toEqual({});
    expect(toUsage(stepUsage({}), undefined)).toEqual({});
  });

  test("without a raw OpenAI usage object the counts are taken as given, zeros included", () => {
    expect(toUsage(stepUsage({ input: 10, output: 0, cacheRead: 0, reasoning: 2 }), undefined)).toEqual({
      inputTokens: 10,
      outputTokens: 0,
      cachedInputTokens: 0,
      reasoningTokens: 2,
    });
  });

  test("a detail the server did not send stays undefined although the provider filled in 0", () => {
    const usage = stepUsage({
      input: 30,
      output: 5,
      cacheRead: 0,
      reasoning: 0,
      raw: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 },
    });
    expect(toUsage(usage, undefined)).toEqual({ inputTokens: 30, outputTokens: 5 });
  });

  test("a detail the server did send as 0 stays 0", () => {
    const usage = stepUsage({
      input: 30,
      output: 5,
      cacheRead: 0,
      reasoning: 0,
      raw: {
        prompt_tokens: 30,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    });
    expect(toUsage(usage, undefined)).toEqual({
      inputTokens: 30,
      outputTokens: 5,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
  });

  test("cost: OpenRouter's provider metadata first, else the raw usage's cost", () => {
    const raw = { prompt_tokens: 1, completion_tokens: 1, cost: 0.5 };
    expect(
      toUsage(stepUsage({ input: 1, output: 1, raw }), { openrouter: { usage: { cost: 0.25 } } }).costUsd,
    ).toBe(0.25);
    expect(toUsage(stepUsage({ input: 1, output: 1, raw }), { openrouter: { usage: {} } }).costUsd).toBe(0.5);
    expect(toUsage(stepUsage({ raw: { cost: 0 } }), undefined)).toEqual({ costUsd: 0 });
  });

  test("a cost that is not a finite number is unavailable", () => {
    expect(toUsage(stepUsage({ raw: { cost: "0.1" } }), { openrouter: { usage: { cost: null } } })).toEqual(
      {},
    );
    expect(toUsage(undefined, { openrouter: { usage: [1, 2] } })).toEqual({});
  });
});
