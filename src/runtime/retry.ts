/** How the runtime retries a failed provider stream. */
export interface RetryPolicy {
  /** Attempts per model in the chain, including the first. */
  attemptsPerModel: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attemptsPerModel: 2, baseDelayMs: 500, maxDelayMs: 8_000 };

export type RetryDecision = { retry: true; delayMs: number; modelIndex: number } | { retry: false };

/**
 * After attempt number `attempt` (0-based, counted across the chain) failed: try again on the same
 * model with exponential backoff, move to the next model in the chain, or give up. An attempt that
 * already ran a tool is never replayed: its effect may have happened.
 */
export function decideRetry(
  policy: RetryPolicy,
  attempt: number,
  chainLength: number,
  toolCalled: boolean,
): RetryDecision {
  if (toolCalled) return { retry: false };
  const next = attempt + 1;
  const modelIndex = Math.floor(next / policy.attemptsPerModel);
  if (modelIndex >= chainLength) return { retry: false };
  const sameModelAttempt = next % policy.attemptsPerModel;
  const delayMs =
    sameModelAttempt === 0
      ? 0
      : Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (sameModelAttempt - 1));
  return { retry: true, delayMs, modelIndex };
}
