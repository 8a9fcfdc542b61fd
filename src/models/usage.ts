import type { LanguageModelUsage, ProviderMetadata } from "ai";
import type { Usage } from "../runtime/types.ts";

/*
 * Both HTTP providers turn an OpenAI-style usage object into AI SDK counts with `?? 0`, so a
 * detail the server never sent (cached or reasoning tokens) arrives as 0. When the raw object is
 * available it decides what was actually reported; unavailable must stay undefined, not 0.
 */
interface OpenAIChatUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  prompt_tokens_details?: { cached_tokens?: unknown } | null;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
}

function asOpenAIChatUsage(raw: unknown): OpenAIChatUsage | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  return "prompt_tokens" in raw || "completion_tokens" in raw ? (raw as OpenAIChatUsage) : undefined;
}

function count(value: number | undefined, reported: boolean): number | undefined {
  return reported && typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function finiteNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function numberField(container: unknown, key: string): number | undefined {
  if (typeof container !== "object" || container === null || Array.isArray(container)) return undefined;
  return finiteNumber((container as Record<string, unknown>)[key]);
}

/**
 * Cost of the step in US dollars, as the provider reported it: OpenRouter's provider puts it in
 * `providerMetadata.openrouter.usage.cost` (requested with the model setting
 * `usage: { include: true }`); OpenAI-compatible servers that do usage accounting the same way
 * send `usage.cost`, which arrives in the raw usage object.
 */
function costUsdOf(raw: unknown, providerMetadata: ProviderMetadata | undefined): number | undefined {
  const fromMetadata = numberField(providerMetadata?.openrouter?.usage, "cost");
  const fromRaw = numberField(raw, "cost");
  return fromMetadata ?? fromRaw;
}

/**
 * One step's usage as switchboard records it: counts and cost exactly as the provider reported
 * them, `undefined` for anything it did not report (never 0).
 */
export function toUsage(
  stepUsage: LanguageModelUsage | undefined,
  providerMetadata: ProviderMetadata | undefined,
): Usage {
  const raw = asOpenAIChatUsage(stepUsage?.raw);
  // Without a raw OpenAI-style object (offline, scripted or other providers) the counts are as given.
  const reported = {
    input: raw === undefined || finiteNumber(raw.prompt_tokens) !== undefined,
    output: raw === undefined || finiteNumber(raw.completion_tokens) !== undefined,
    cached: raw === undefined || finiteNumber(raw.prompt_tokens_details?.cached_tokens) !== undefined,
    reasoning:
      raw === undefined || finiteNumber(raw.completion_tokens_details?.reasoning_tokens) !== undefined,
  };
  const usage: Usage = {
    inputTokens: count(stepUsage?.inputTokens, reported.input),
    outputTokens: count(stepUsage?.outputTokens, reported.output),
    reasoningTokens: count(stepUsage?.outputTokenDetails?.reasoningTokens, reported.reasoning),
    cachedInputTokens: count(stepUsage?.inputTokenDetails?.cacheReadTokens, reported.cached),
    costUsd: costUsdOf(stepUsage?.raw, providerMetadata),
  };
  // Absent keys rather than keys holding undefined: records compare and serialise cleanly.
  for (const key of Object.keys(usage) as (keyof Usage)[]) {
    if (usage[key] === undefined) delete usage[key];
  }
  return usage;
}
