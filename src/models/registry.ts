import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOpenRouter } from "@openrouter/ai-sdk-provider";
import { SwitchboardError } from "../errors.ts";
import { imageBodyFetch, withImageBodies } from "./image-body.ts";
import type { LanguageModelV4 } from "./language-model-v4.ts";
import { createOfflineModel, type OfflineModelOptions } from "./offline.ts";
import { formatModelSpec, type ModelSpec, parseModelSpec } from "./spec.ts";

/** The environment variables the model registry reads. Empty strings count as unset. */
export interface ModelEnv {
  /** The primary model spec. Default: {@link DEFAULT_OPENROUTER_MODEL} when OPENROUTER_API_KEY is set, else `offline`. */
  SWITCHBOARD_MODEL?: string;
  /** Comma-separated specs tried in order after the primary fails. Default: none. */
  SWITCHBOARD_FALLBACK_MODELS?: string;
  OPENROUTER_API_KEY?: string;
  /** Default: {@link DEFAULT_OPENROUTER_BASE_URL}. */
  OPENROUTER_BASE_URL?: string;
  /** Required by `openai-compatible:` specs, e.g. http://127.0.0.1:11434/v1 for Ollama. */
  OPENAI_COMPATIBLE_BASE_URL?: string;
  /** Optional: local servers such as Ollama need none. */
  OPENAI_COMPATIBLE_API_KEY?: string;
}

export interface ResolvedModel {
  /** Canonical spec, e.g. `openrouter:anthropic/claude-sonnet-4`; recorded with each step. */
  spec: string;
  model: LanguageModelV4;
  /** Human-readable, without secrets: for logs and status pages. */
  label: string;
}

export interface ModelRegistry {
  /** The primary model first, then the fallbacks in the order configured. Never empty. */
  chain: [ResolvedModel, ...ResolvedModel[]];
  /** The models users may pick with /model (SWITCHBOARD_CONFIG `models`), by name. */
  named: ReadonlyMap<string, ResolvedModel>;
  /** One line naming every model of the chain and where it is served; contains no secrets. */
  describe(): string;
}

/**
 * The model used when OPENROUTER_API_KEY is set and SWITCHBOARD_MODEL is not: a capable,
 * widely available tool-calling model.
 */
export const DEFAULT_OPENROUTER_MODEL = "openrouter:anthropic/claude-sonnet-4";
export const DEFAULT_OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1";

export interface ModelRegistryOptions {
  /** How the offline model paces its deltas. */
  offline?: OfflineModelOptions;
  /** Pickable models by name (SWITCHBOARD_CONFIG `models`), specs already checked by the config. */
  named?: Readonly<Record<string, string>>;
}

/**
 * Resolves the configured model chain from an explicit environment object (process.env is never
 * read here). Fails fast with a `config_invalid` SwitchboardError that names the variable to fix.
 */
export function createModelRegistry(env: ModelEnv, options: ModelRegistryOptions = {}): ModelRegistry {
  const settings = readSettings(env);
  const specs = configuredSpecs(settings);
  const chain = specs.map((spec) => resolveModel(spec, settings, options)) as ModelRegistry["chain"];
  const named = new Map<string, ResolvedModel>();
  for (const [name, raw] of Object.entries(options.named ?? {})) {
    const spec = parseModelSpec(raw);
    // One provider instance per spec: a named model that is also in the chain is the same object.
    let resolved = chain.find((m) => m.spec === formatModelSpec(spec));
    try {
      resolved ??= resolveModel(spec, settings, options);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new SwitchboardError("config_invalid", `SWITCHBOARD_CONFIG models.${name}: ${message}`, {
        details: { variable: "SWITCHBOARD_CONFIG" },
      });
    }
    named.set(name, resolved);
  }
  return {
    chain,
    named,
    describe: () => {
      const [primary, ...fallbacks] = chain;
      const tail =
        fallbacks.length === 0 ? "no fallbacks" : `fallbacks: ${fallbacks.map((m) => m.label).join(", ")}`;
      return `model: ${primary.label}; ${tail}`;
    },
  };
}

interface Settings {
  model?: string;
  fallbackModels?: string;
  openrouterApiKey?: string;
  openrouterBaseUrl: string;
  openaiCompatibleBaseUrl?: string;
  openaiCompatibleApiKey?: string;
}

function readSettings(env: ModelEnv): Settings {
  const value = (raw: string | undefined) => (raw?.trim() ? raw.trim() : undefined);
  const openaiCompatibleBaseUrl = value(env.OPENAI_COMPATIBLE_BASE_URL);
  return {
    model: value(env.SWITCHBOARD_MODEL),
    fallbackModels: value(env.SWITCHBOARD_FALLBACK_MODELS),
    openrouterApiKey: value(env.OPENROUTER_API_KEY),
    openrouterBaseUrl: checkedBaseUrl(
      "OPENROUTER_BASE_URL",
      value(env.OPENROUTER_BASE_URL) ?? DEFAULT_OPENROUTER_BASE_URL,
      DEFAULT_OPENROUTER_BASE_URL,
    ),
    openaiCompatibleBaseUrl:
      openaiCompatibleBaseUrl === undefined
        ? undefined
        : checkedBaseUrl("OPENAI_COMPATIBLE_BASE_URL", openaiCompatibleBaseUrl, "http://127.0.0.1:11434/v1"),
    openaiCompatibleApiKey: value(env.OPENAI_COMPATIBLE_API_KEY),
  };
}

function configuredSpecs(settings: Settings): ModelSpec[] {
  const primary =
    settings.model !== undefined
      ? parseModelSpec(settings.model, "SWITCHBOARD_MODEL")
      : parseModelSpec(settings.openrouterApiKey !== undefined ? DEFAULT_OPENROUTER_MODEL : "offline");
  const fallbacks = (settings.fallbackModels ?? "")
    .split(",")
    .filter((item) => item.trim() !== "")
    .map((item) => parseModelSpec(item, "SWITCHBOARD_FALLBACK_MODELS"));
  const specs = [primary, ...fallbacks];

  const seen = new Set<string>();
  for (const [index, spec] of specs.entries()) {
    const canonical = formatModelSpec(spec);
    if (seen.has(canonical)) {
      throw configError(
        "SWITCHBOARD_FALLBACK_MODELS",
        `The model chain lists ${canonical} twice. Remove the repeat from SWITCHBOARD_FALLBACK_MODELS ` +
          "(the runtime already retries a model before falling back).",
      );
    }
    seen.add(canonical);
    if (spec.provider === "offline" && index < specs.length - 1) {
      const variable = index === 0 ? "SWITCHBOARD_MODEL" : "SWITCHBOARD_FALLBACK_MODELS";
      throw configError(
        variable,
        "The offline model never fails, so the models after it in the chain would never be used. " +
          (index === 0
            ? "Set SWITCHBOARD_MODEL (or OPENROUTER_API_KEY) to a real model, or unset SWITCHBOARD_FALLBACK_MODELS."
            : "Put offline last in SWITCHBOARD_FALLBACK_MODELS."),
      );
    }
  }
  return specs;
}

function resolveModel(spec: ModelSpec, settings: Settings, options: ModelRegistryOptions): ResolvedModel {
  const canonical = formatModelSpec(spec);
  switch (spec.provider) {
    case "offline":
      return {
        spec: canonical,
        model: createOfflineModel(options.offline),
        label: "offline (built-in, no model configured)",
      };
    case "openrouter": {
      if (settings.openrouterApiKey === undefined) {
        throw configError(
          "OPENROUTER_API_KEY",
          `${canonical} needs OPENROUTER_API_KEY, which is not set. Create a key at openrouter.ai/keys and set ` +
            "OPENROUTER_API_KEY, or choose another model with SWITCHBOARD_MODEL.",
        );
      }
      const openrouter = createOpenRouter({
        baseURL: settings.openrouterBaseUrl,
        apiKey: settings.openrouterApiKey,
        // "strict" asks for usage in the stream (stream_options.include_usage).
        compatibility: "strict",
        appName: "switchboard",
        fetch: imageBodyFetch("openrouter"),
      });
      return {
        spec: canonical,
        // usage.include makes OpenRouter report the cost of each call.
        model: withImageBodies(openrouter.chat(spec.modelId, { usage: { include: true } })),
        label: `${canonical} via ${withoutCredentials(settings.openrouterBaseUrl)}`,
      };
    }
    case "openai-compatible": {
      if (settings.openaiCompatibleBaseUrl === undefined) {
        throw configError(
          "OPENAI_COMPATIBLE_BASE_URL",
          `${canonical} needs OPENAI_COMPATIBLE_BASE_URL, which is not set. Set it to the server's OpenAI API ` +
            "root, for example http://127.0.0.1:11434/v1 for Ollama.",
        );
      }
      const provider = createOpenAICompatible({
        name: "openai-compatible",
        baseURL: settings.openaiCompatibleBaseUrl,
        apiKey: settings.openaiCompatibleApiKey,
        includeUsage: true,
        fetch: imageBodyFetch("openai-compatible"),
      });
      return {
        spec: canonical,
        model: withImageBodies(provider.chatModel(spec.modelId)),
        label: `${canonical} via ${withoutCredentials(settings.openaiCompatibleBaseUrl)}`,
      };
    }
  }
}

function checkedBaseUrl(variable: keyof ModelEnv, value: string, example: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw configError(
      variable,
      `${variable} "${withoutCredentials(value)}" is not an http(s) URL. Set it to the API root, for example ${example}.`,
    );
  }
  return value.replace(/\/+$/, "");
}

/** Base URLs may embed credentials (https://user:secret@host); labels and errors never show them. */
function withoutCredentials(value: string): string {
  try {
    const url = new URL(value);
    if (url.username === "" && url.password === "") return value;
    url.username = "";
    url.password = "";
    return url.toString().replace(/\/+$/, "");
  } catch {
    return value.replace(/\/\/[^/@]*@/, "//");
  }
}

function configError(variable: keyof ModelEnv, message: string): SwitchboardError {
  return new SwitchboardError("config_invalid", message, { details: { variable } });
}
