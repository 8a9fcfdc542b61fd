import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { formatModelSpec, parseModelSpec } from "../../src/models/spec.ts";

describe("parseModelSpec", () => {
  test.each([
    [
      "openrouter:anthropic/claude-sonnet-4",
      { provider: "openrouter", modelId: "anthropic/claude-sonnet-4" },
    ],
    [
      "openrouter:meta-llama/llama-3.1-8b-instruct:free",
      {
        provider: "openrouter",
        modelId: "meta-llama/llama-3.1-8b-instruct:free",
      },
    ],
    ["openai-compatible:llama3.2:3b", { provider: "openai-compatible", modelId: "llama3.2:3b" }],
    ["  offline \n", { provider: "offline" }],
  ])("accepts %p", (value, expected) => {
    const spec = parseModelSpec(value);
    expect(spec).toEqual(expected as ReturnType<typeof parseModelSpec>);
    expect(parseModelSpec(formatModelSpec(spec))).toEqual(spec);
  });

  test.each([
    ["", "it is empty"],
    ["   ", "it is empty"],
    ["gpt-4o", 'it names no provider (did you mean "openrouter:gpt-4o"?)'],
    ["anthropic:claude-sonnet-4", '"anthropic" is not a known provider'],
    ["openrouter:", 'the model id after "openrouter:" is missing'],
    ["openai-compatible:", 'the model id after "openai-compatible:" is missing'],
    ["openrouter:anthropic/claude sonnet", "the model id contains whitespace"],
    ["offline:fast", '"offline" takes no model id'],
  ])("rejects %p: %s", (value, problem) => {
    let caught: unknown;
    try {
      parseModelSpec(value);
    } catch (error) {
      caught = error;
    }
    expect(isSwitchboardError(caught, "config_invalid")).toBe(true);
    const message = (caught as Error).message;
    expect(message).toContain(`SWITCHBOARD_MODEL has an invalid model spec "${value}": ${problem}.`);
    expect(message).toContain('"openrouter:<model id>", "openai-compatible:<model id>" or "offline"');
    expect(message).toContain("for example SWITCHBOARD_MODEL=openrouter:anthropic/claude-sonnet-4");
  });

  test("names SWITCHBOARD_FALLBACK_MODELS and a list example for a bad fallback", () => {
    expect(() => parseModelSpec("mistral", "SWITCHBOARD_FALLBACK_MODELS")).toThrow(
      'SWITCHBOARD_FALLBACK_MODELS has an invalid model spec "mistral": it names no provider ' +
        '(did you mean "openrouter:mistral"?). Use "openrouter:<model id>", "openai-compatible:<model id>" ' +
        'or "offline", for example SWITCHBOARD_FALLBACK_MODELS=openrouter:openai/gpt-4o-mini,offline.',
    );
  });
});
