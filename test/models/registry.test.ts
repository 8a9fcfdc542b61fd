import { afterAll, describe, expect, test } from "bun:test";
import { stepCountIs, streamText } from "ai";
import { isSwitchboardError } from "../../src/errors.ts";
import { createModelRegistry, DEFAULT_OPENROUTER_MODEL, type ModelEnv } from "../../src/models/registry.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";

function configErrorOf(env: ModelEnv): { message: string; variable: unknown } {
  try {
    createModelRegistry(env);
  } catch (error) {
    if (!isSwitchboardError(error, "config_invalid")) throw error;
    return { message: error.message, variable: error.details?.variable };
  }
  throw new Error("expected createModelRegistry to fail");
}

describe("createModelRegistry defaults", () => {
  test("no model and no OpenRouter key: the offline model alone", () => {
    const registry = createModelRegistry({});
    expect(registry.chain.map((m) => m.spec)).toEqual(["offline"]);
    expect(registry.chain[0].model.modelId).toBe("offline");
    expect(registry.describe()).toBe("model: offline (built-in, no model configured); no fallbacks");
  });

  test("empty strings count as unset", () => {
    const registry = createModelRegistry({
      SWITCHBOARD_MODEL: "",
      OPENROUTER_API_KEY: " ",
      SWITCHBOARD_FALLBACK_MODELS: "",
    });
    expect(registry.chain.map((m) => m.spec)).toEqual(["offline"]);
  });

  test("an OpenRouter key without a model: the documented default OpenRouter model", () => {
    const registry = createModelRegistry({ OPENROUTER_API_KEY: "sk-or-test-secret" });
    expect(DEFAULT_OPENROUTER_MODEL).toBe("openrouter:anthropic/claude-sonnet-4");
    expect(registry.chain.map((m) => m.spec)).toEqual([DEFAULT_OPENROUTER_MODEL]);
    expect(registry.chain[0].model.provider).toBe("openrouter");
    expect(registry.chain[0].model.modelId).toBe("anthropic/claude-sonnet-4");
    expect(registry.describe()).toBe(
      "model: openrouter:anthropic/claude-sonnet-4 via https://openrouter.ai/api/v1; no fallbacks",
    );
    expect(registry.describe()).not.toContain("sk-or-test-secret");
  });

  test("the primary first, then the fallbacks in the configured order", () => {
    const registry = createModelRegistry({
      SWITCHBOARD_MODEL: "openai-compatible:llama3.2",
      SWITCHBOARD_FALLBACK_MODELS:
        " openrouter:openai/gpt-4o-mini , openrouter:anthropic/claude-sonnet-4,offline,",
      OPENROUTER_API_KEY: "sk-or-test-secret",
      OPENAI_COMPATIBLE_BASE_URL: "http://user:hunter2@127.0.0.1:11434/v1/",
    });
    expect(registry.chain.map((m) => m.spec)).toEqual([
      "openai-compatible:llama3.2",
      "openrouter:openai/gpt-4o-mini",
      "openrouter:anthropic/claude-sonnet-4",
      "offline",
    ]);
    expect(registry.chain.map((m) => m.model.modelId)).toEqual([
      "llama3.2",
      "openai/gpt-4o-mini",
      "anthropic/claude-sonnet-4",
      "offline",
    ]);
    const description = registry.describe();
    expect(description).toBe(
      "model: openai-compatible:llama3.2 via http://127.0.0.1:11434/v1; fallbacks: " +
        "openrouter:openai/gpt-4o-mini via https://openrouter.ai/api/v1, " +
        "openrouter:anthropic/claude-sonnet-4 via https://openrouter.ai/api/v1, offline (built-in, no model configured)",
    );
    expect(description).not.toContain("hunter2");
  });
});

describe("createModelRegistry errors", () => {
  test("an openrouter model without OPENROUTER_API_KEY", () => {
    const error = configErrorOf({ SWITCHBOARD_MODEL: "openrouter:openai/gpt-4o" });
    expect(error.variable).toBe("OPENROUTER_API_KEY");
    expect(error.message).toBe(
      "openrouter:openai/gpt-4o needs OPENROUTER_API_KEY, which is not set. Create a key at openrouter.ai/keys " +
        "and set OPENROUTER_API_KEY, or choose another model with SWITCHBOARD_MODEL.",
    );
  });

  test("an openrouter fallback without OPENROUTER_API_KEY", () => {
    const error = configErrorOf({
      SWITCHBOARD_MODEL: "openai-compatible:llama3.2",
      OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:11434/v1",
      SWITCHBOARD_FALLBACK_MODELS: "openrouter:openai/gpt-4o-mini",
    });
    expect(error.variable).toBe("OPENROUTER_API_KEY");
  });

  test("an openai-compatible model without OPENAI_COMPATIBLE_BASE_URL", () => {
    const error = configErrorOf({ SWITCHBOARD_MODEL: "openai-compatible:llama3.2" });
    expect(error.variable).toBe("OPENAI_COMPATIBLE_BASE_URL");
    expect(error.message).toContain(
      "openai-compatible:llama3.2 needs OPENAI_COMPATIBLE_BASE_URL, which is not set.",
    );
    expect(error.message).toContain("http://127.0.0.1:11434/v1 for Ollama");
  });

  test.each([
    ["OPENAI_COMPATIBLE_BASE_URL", "127.0.0.1:11434/v1"],
    ["OPENAI_COMPATIBLE_BASE_URL", "ftp://127.0.0.1/v1"],
    ["OPENROUTER_BASE_URL", "not a url"],
  ] as const)("%s=%p is not an http(s) URL", (variable, value) => {
    const error = configErrorOf({ [variable]: value });
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(`${variable} "${value}" is not an http(s) URL.`);
  });

  test("a bad fallback spec names SWITCHBOARD_FALLBACK_MODELS", () => {
    const error = configErrorOf({
      OPENROUTER_API_KEY: "k",
      SWITCHBOARD_FALLBACK_MODELS: "openrouter:a/b,gpt-4o",
    });
    expect(error.variable).toBe("SWITCHBOARD_FALLBACK_MODELS");
    expect(error.message).toContain('SWITCHBOARD_FALLBACK_MODELS has an invalid model spec "gpt-4o"');
  });

  test("a model listed twice", () => {
    const error = configErrorOf({
      OPENROUTER_API_KEY: "k",
      SWITCHBOARD_FALLBACK_MODELS: "openrouter:anthropic/claude-sonnet-4",
    });
    expect(error.message).toContain("lists openrouter:anthropic/claude-sonnet-4 twice");
  });

  test("models after offline would never be used", () => {
    expect(configErrorOf({ SWITCHBOARD_FALLBACK_MODELS: "openai-compatible:llama3.2" }).variable).toBe(
      "SWITCHBOARD_MODEL",
    );
    const error = configErrorOf({
      OPENROUTER_API_KEY: "k",
      SWITCHBOARD_FALLBACK_MODELS: "offline,openrouter:a/b",
    });
    expect(error.variable).toBe("SWITCHBOARD_FALLBACK_MODELS");
    expect(error.message).toContain("Put offline last in SWITCHBOARD_FALLBACK_MODELS.");
  });
});

describe("the chain's models reach their configured servers", () => {
  const server = startFakeLlmServer();
  afterAll(() => server.stop());

  test("each entry answers from its own endpoint, with its own credentials, in chain order", async () => {
    const registry = createModelRegistry({
      SWITCHBOARD_MODEL: "openai-compatible:local-model",
      SWITCHBOARD_FALLBACK_MODELS: "openrouter:vendor/remote-model,offline",
      OPENAI_COMPATIBLE_BASE_URL: server.openaiBaseUrl,
      OPENAI_COMPATIBLE_API_KEY: "local-key",
      OPENROUTER_API_KEY: "router-key",
      OPENROUTER_BASE_URL: server.openrouterBaseUrl,
    });
    const answers: string[] = [];
    for (const entry of registry.chain) {
      const result = streamText({
        model: entry.model,
        messages: [{ role: "user", content: `ping ${entry.spec}` }],
        stopWhen: stepCountIs(1),
        maxRetries: 0,
      });
      answers.push(await result.text);
    }
    expect(answers[0]).toBe("echo: ping openai-compatible:local-model");
    expect(answers[1]).toBe("echo: ping openrouter:vendor/remote-model");
    expect(answers[2]).toContain("I'm running in offline mode");
    expect(
      server
        .requests()
        .map((request) => [request.path, request.model, request.authorization, request.stream]),
    ).toEqual([
      ["/v1/chat/completions", "local-model", "Bearer local-key", true],
      ["/api/v1/chat/completions", "vendor/remote-model", "Bearer router-key", true],
    ]);
  }, 10_000);
});
