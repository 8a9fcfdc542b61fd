import { describe, expect, test } from "bun:test";
import { createRetryPolicy } from "../../outbox/retry-policy.ts";
import { SwitchboardError } from "../../src/errors.ts";

const error = (code: ConstructorParameters<typeof SwitchboardError>[0], options = {}) =>
  new SwitchboardError(code, `${code} happened`, options);

describe("retry decisions", () => {
  const policy = createRetryPolicy({ idempotentSend: false, random: () => 0 });

  test("a 429 is retried exactly when the platform said, however many attempts before", () => {
    expect(policy(error("platform_rate_limited", { retryAfterMs: 7000 }), 1)).toEqual({
      retry: true,
      delayMs: 7000,
    });
    expect(policy(error("platform_rate_limited", { retryAfterMs: 10 }), 50)).toEqual({
      retry: true,
      delayMs: 10,
    });
  });

  test("unavailable backs off exponentially from 500 ms to the 60 s ceiling, then fails at attempt 8", () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7].map((attempt) => {
      const decision = policy(error("platform_unavailable"), attempt);
      if (!decision.retry) throw new Error(`attempt ${attempt} should retry`);
      return decision.delayMs * 2;
    });
    expect(ceilings).toEqual([500, 1000, 2000, 4000, 8000, 16000, 32000]);
    const capped = createRetryPolicy({ idempotentSend: false, random: () => 0.999999, maxAttempts: 20 });
    expect(capped(error("platform_unavailable"), 12)).toEqual({ retry: true, delayMs: 60_000 });
    expect(policy(error("platform_unavailable"), 8)).toEqual({
      retry: false,
      outcome: "failed",
      reason: "gave up after 8 attempts: platform_unavailable happened",
    });
  });

  test("jitter stays between half the delay and the full delay", () => {
    for (const random of [0, 0.25, 0.5, 0.99]) {
      const decision = createRetryPolicy({ idempotentSend: false, random: () => random })(
        error("platform_unavailable"),
        3,
      );
      expect(decision.retry && decision.delayMs >= 1000 && decision.delayMs <= 2000).toBe(true);
    }
  });

  test("a rejection fails at once with the platform's reason", () => {
    expect(policy(error("platform_rejected"), 1)).toEqual({
      retry: false,
      outcome: "failed",
      reason: "platform_rejected happened",
    });
    expect(policy(error("unauthorized"), 1)).toMatchObject({ retry: false, outcome: "failed" });
  });

  test("a hung call is ambiguous unless sends are idempotent", () => {
    expect(policy(error("platform_timeout"), 1)).toMatchObject({ retry: false, outcome: "ambiguous" });
    expect(policy(new TypeError("fetch failed"), 1)).toMatchObject({ retry: false, outcome: "ambiguous" });
    const idempotent = createRetryPolicy({ idempotentSend: true, random: () => 0 });
    expect(idempotent(error("platform_timeout"), 1)).toEqual({ retry: true, delayMs: 250 });
    expect(idempotent(error("platform_timeout"), 8)).toMatchObject({ retry: false, outcome: "failed" });
  });
});
