/** Delay before retry number `failedAttempts` of one occurrence: 1, 2, 4, 8, 16, 32, then 60 s. */
export function retryDelayMs(failedAttempts: number): number {
  if (!Number.isInteger(failedAttempts) || failedAttempts < 1) {
    throw new RangeError(`failedAttempts must be an integer ≥ 1, got ${failedAttempts}`);
  }
  return Math.min(1000 * 2 ** (failedAttempts - 1), MAX_RETRY_DELAY_MS);
}

export const MAX_RETRY_DELAY_MS = 60_000;

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/**
 * Whether an occurrence whose attempt number `attempt` just failed gets another one. A
 * `retryAfterMs` hint from the dispatcher lengthens the delay, never shortens it.
 */
export function decideRetry(attempt: number, maxAttempts: number, retryAfterMs?: number): RetryDecision {
  if (attempt >= maxAttempts) return { retry: false };
  const delayMs = retryDelayMs(attempt);
  return { retry: true, delayMs: Math.max(delayMs, Math.min(retryAfterMs ?? 0, MAX_RETRY_DELAY_MS)) };
}
