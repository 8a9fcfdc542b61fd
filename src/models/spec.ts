import { z } from "zod";
import { SwitchboardError } from "../errors.ts";

/** A parsed model spec. `offline` names no model id; the HTTP providers always do. */
export type ModelSpec =
  | { provider: "openrouter"; modelId: string }
  | { provider: "openai-compatible"; modelId: string }
  | { provider: "offline" };

/** The environment variable a spec came from; named in every error about it. */
export type ModelSpecSource = "SWITCHBOARD_MODEL" | "SWITCHBOARD_FALLBACK_MODELS";

const EXAMPLES: Record<ModelSpecSource, string> = {
  SWITCHBOARD_MODEL: "openrouter:anthropic/claude-sonnet-4",
  SWITCHBOARD_FALLBACK_MODELS: "openrouter:openai/gpt-4o-mini,offline",
};
const FORMS = '"openrouter:<model id>", "openai-compatible:<model id>" or "offline"';
const HTTP_PROVIDERS = ["openrouter", "openai-compatible"] as const;

/*
 * Only the first colon separates provider and model id: ids themselves may contain colons
 * (OpenRouter's "meta-llama/llama-3.1-8b-instruct:free", Ollama's "llama3.2:3b").
 */
const modelSpecSchema = z.string().transform((raw, ctx): ModelSpec => {
  const value = raw.trim();
  const fail = (problem: string) => {
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  };
  if (value === "") return fail("it is empty");
  if (value === "offline") return { provider: "offline" };
  const colon = value.indexOf(":");
  if (colon === -1) return fail(`it names no provider (did you mean "openrouter:${value}"?)`);
  const provider = value.slice(0, colon);
  const modelId = value.slice(colon + 1);
  if (provider === "offline") return fail('"offline" takes no model id');
  if (!isHttpProvider(provider)) return fail(`"${provider}" is not a known provider`);
  if (modelId === "") return fail(`the model id after "${provider}:" is missing`);
  if (/\s/.test(modelId)) return fail("the model id contains whitespace");
  return { provider, modelId };
});

function isHttpProvider(value: string): value is (typeof HTTP_PROVIDERS)[number] {
  return (HTTP_PROVIDERS as readonly string[]).includes(value);
}

/**
 * Parses one model spec such as `openrouter:anthropic/claude-sonnet-4`,
 * `openai-compatible:llama3.2` or `offline`. Surrounding whitespace is ignored.
 * @throws SwitchboardError `config_invalid` naming `source`, the bad value and an example.
 */
export function parseModelSpec(value: string, source: ModelSpecSource = "SWITCHBOARD_MODEL"): ModelSpec {
  const result = modelSpecSchema.safeParse(value);
  if (result.success) return result.data;
  const problem = result.error.issues[0]?.message ?? "it is malformed";
  throw new SwitchboardError(
    "config_invalid",
    `${source} has an invalid model spec "${value}": ${problem}. ` +
      `Use ${FORMS}, for example ${source}=${EXAMPLES[source]}.`,
    { details: { variable: source, value } },
  );
}

/** Why `value` is not a model spec, or null when it is one (for config files that name specs). */
export function modelSpecProblem(value: string): string | null {
  const result = modelSpecSchema.safeParse(value);
  return result.success ? null : (result.error.issues[0]?.message ?? "it is malformed");
}

/** The canonical string form of a spec, which `parseModelSpec` reads back unchanged. */
export function formatModelSpec(spec: ModelSpec): string {
  return spec.provider === "offline" ? "offline" : `${spec.provider}:${spec.modelId}`;
}
