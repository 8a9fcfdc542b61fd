import type { Usage } from "../runtime/types.ts";

const FIELDS = ["inputTokens", "outputTokens", "reasoningTokens", "cachedInputTokens", "costUsd"] as const;

/**
 * Run totals from per-step usage. A field is summed only when every step reported it:
 * unavailable is not zero, so one silent step makes the total unavailable too.
 */
export function sumUsage(steps: readonly Usage[]): { usage: Usage; costComplete: boolean } {
  const usage: Usage = {};
  for (const field of FIELDS) {
    if (steps.length > 0 && steps.every((s) => s[field] !== undefined)) {
      usage[field] = steps.reduce((sum, s) => sum + (s[field] ?? 0), 0);
    }
  }
  return { usage, costComplete: steps.every((s) => s.costUsd !== undefined) };
}
