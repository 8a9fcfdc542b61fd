import { isSwitchboardError } from "../src/errors.ts";

export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; outcome: "failed" | "ambiguous"; reason: string };

export interface RetryPolicyOptions {
  /** The adapter may repeat a send after an uncertain outcome without a second visible message. */
  idempotentSend: boolean;
  /** Attempts before a transient failure becomes `failed`. Default 8. */
  maxAttempts?: number;
  /** First backoff delay. Default 500 ms. */
  baseDelayMs?: number;
  /** Backoff ceiling. Default 60 s. */
  maxDelayMs?: number;
  /** Uniform in [0, 1); injected so tests are exact. Default Math.random. */
  random?: () => number;
}

export type RetryPolicy = (error: unknown, attempt: number) => RetryDecision;

export const DEFAULT_MAX_ATTEMPTS = 8;
export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 60_000;

/**
 * Decides what a failed platform call means for its record. `attempt` is 1 for the first try.
 * - platform_rate_limited: retry when the platform said (retryAfterMs), never counted as failing.
 * - platform_unavailable or any retryable error: exponential backoff with jitter, then `failed`.
 * - platform_timeout (no answer): retry with the same idempotency key when sends are idempotent,
 *   else `ambiguous` — the message may be on the platform already.
 * - an error the adapter did not classify: same as a timeout, since nothing says it was not sent.
 * - anything else (platform_rejected, unauthorized, …): `failed` at once with the platform's reason.
 */
export function createRetryPolicy(options: RetryPolicyOptions): RetryPolicy {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const random = options.random ?? Math.random;

  const backoff = (attempt: number, reason: string): RetryDecision => {
    if (attempt >= maxAttempts) {
      return { retry: false, outcome: "failed", reason: `gave up after ${attempt} attempts: ${reason}` };
    }
    const ceilingMs = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    // Equal jitter: at least half the delay, so a flapping platform is not hammered.
    return { retry: true, delayMs: Math.round(ceilingMs / 2 + random() * (ceilingMs / 2)) };
  };

  return function decideRetry(error, attempt) {
    const reason = error instanceof Error ? error.message : String(error);
    if (!isSwitchboardError(error)) {
      return options.idempotentSend
        ? backoff(attempt, reason)
        : { retry: false, outcome: "ambiguous", reason: `unclassified error, outcome unknown: ${reason}` };
    }
    switch (error.code) {
      case "platform_rate_limited":
        return error.retryAfterMs === undefined
          ? backoff(Math.min(attempt, maxAttempts - 1), reason)
          : { retry: true, delayMs: error.retryAfterMs };
      case "platform_timeout":
        return options.idempotentSend
          ? backoff(attempt, reason)
          : { retry: false, outcome: "ambiguous", reason: `no answer from the platform: ${reason}` };
      case "platform_unavailable":
        return backoff(attempt, reason);
      default:
        return error.retryable ? backoff(attempt, reason) : { retry: false, outcome: "failed", reason };
    }
  };
}
