import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { defaultModelName, pickableModels } from "../../src/gateway/config/index.ts";
import { chainWith, effectiveModel } from "../../src/gateway/model-choice.ts";
import { createModelRegistry } from "../../src/models/registry.ts";
import { configWith, fileConfig } from "./support/config.ts";

function refusal(fileJson: unknown): string {
  try {
    configWith({}, fileJson);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error.message;
    throw error;
  }
  throw new Error(`expected config_invalid for ${JSON.stringify(fileJson)}`);
}

describe("SWITCHBOARD_CONFIG models", () => {
  test("names and a per-surface default: the most specific surface key wins", () => {
    const file = fileConfig({
      models: {
        fast: "openrouter:openai/gpt-4o-mini",
        smart: "openrouter:anthropic/claude-sonnet-4",
        default: { "*:*": "smart", "telegram:*": "fast", "telegram:group": "smart" },
      },
    });
    expect(pickableModels(file)).toEqual({
      fast: "openrouter:openai/gpt-4o-mini",
      smart: "openrouter:anthropic/claude-sonnet-4",
    });
    expect(defaultModelName(file, "telegram", "dm")).toBe("fast");
    expect(defaultModelName(file, "telegram", "group")).toBe("smart");
    expect(defaultModelName(file, "slack", "dm")).toBe("smart");
    expect(defaultModelName(fileConfig({ models: { a: "offline", default: "a" } }), "web", "dm")).toBe("a");
    expect(defaultModelName(fileConfig({ models: { a: "offline" } }), "web", "dm")).toBeNull();
    expect(defaultModelName(fileConfig(), "web", "dm")).toBeNull();
  });

  test("refusals name the key and what is wrong", () => {
    expect(refusal({ version: 1, models: { fast: "gpt-4o" } })).toContain(
      'models.fast: "gpt-4o" is not a model spec (it names no provider (did you mean "openrouter:gpt-4o"?))',
    );
    expect(refusal({ version: 1, models: { "Big Model": "offline" } })).toContain(
      'models.Big Model: "Big Model" is not a model name',
    );
    expect(refusal({ version: 1, models: { fast: "offline", default: "smart" } })).toContain(
      'models.default: "smart" is not one of the models named here (fast)',
    );
    expect(refusal({ version: 1, models: { fast: "offline", default: { "irc:dm": "fast" } } })).toContain(
      'models.default.irc:dm: "irc:dm" is not a surface key',
    );
    expect(refusal({ version: 1, models: { fast: { spec: "offline" } } })).toContain("models.fast");
  });

  test("a named model whose provider is not configured stops the start, naming the model", () => {
    try {
      createModelRegistry({}, { named: { smart: "openrouter:anthropic/claude-sonnet-4" } });
      throw new Error("expected config_invalid");
    } catch (error) {
      expect(isSwitchboardError(error, "config_invalid")).toBe(true);
      expect((error as Error).message).toContain("SWITCHBOARD_CONFIG models.smart:");
      expect((error as Error).message).toContain("OPENROUTER_API_KEY");
    }
  });
});

describe("which model a conversation uses", () => {
  test("its choice while configured, else the surface default, else the gateway's own", () => {
    const names = ["fast", "smart"];
    expect(effectiveModel("smart", "fast", names)).toEqual({ name: "smart", chosen: true });
    expect(effectiveModel(undefined, "fast", names)).toEqual({ name: "fast", chosen: false });
    // A name the operator removed from the config falls back instead of failing the run.
    expect(effectiveModel("retired", "fast", names)).toEqual({ name: "fast", chosen: false });
    expect(effectiveModel(undefined, null, names)).toEqual({ name: null, chosen: false });
  });

  test("the fallback chain follows the chosen model, without repeating it", () => {
    const registry = createModelRegistry(
      {
        SWITCHBOARD_MODEL: "openai-compatible:main",
        SWITCHBOARD_FALLBACK_MODELS: "openai-compatible:backup,offline",
        OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:1/v1",
      },
      { named: { smart: "openai-compatible:smart", backup: "openai-compatible:backup" } },
    );
    expect(chainWith(registry.named.get("smart")!, registry.chain).map((m) => m.spec)).toEqual([
      "openai-compatible:smart",
      "openai-compatible:backup",
      "offline",
    ]);
    expect(chainWith(registry.named.get("backup")!, registry.chain).map((m) => m.spec)).toEqual([
      "openai-compatible:backup",
      "offline",
    ]);
    // A named model that is also in the chain is the same provider instance.
    expect(registry.named.get("backup")).toBe(registry.chain[1]);
  });
});
