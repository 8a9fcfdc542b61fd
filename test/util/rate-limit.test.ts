/** Token buckets per key: a burst, then the average rate; keys forgotten oldest first. */
import { describe, expect, test } from "bun:test";
import { KeyedRateLimiter } from "../../src/util/rate-limit.ts";

describe("KeyedRateLimiter", () => {
  test("allows a burst of perMinute, then one every 60/perMinute seconds", () => {
    const limiter = new KeyedRateLimiter({ perMinute: 6 });
    for (let i = 0; i < 6; i++) expect(limiter.take("a", 0)).toEqual({ allowed: true });
    expect(limiter.take("a", 0)).toEqual({ allowed: false, retryAfterMs: 10_000 });
    expect(limiter.take("a", 4_000)).toEqual({ allowed: false, retryAfterMs: 6_000 });
    expect(limiter.take("a", 10_000)).toEqual({ allowed: true });
    expect(limiter.take("a", 10_000).allowed).toBe(false);
    // Refilling never exceeds the burst.
    for (let i = 0; i < 6; i++) expect(limiter.take("a", 3_600_000).allowed).toBe(true);
    expect(limiter.take("a", 3_600_000).allowed).toBe(false);
  });

  test("keys are independent", () => {
    const limiter = new KeyedRateLimiter({ perMinute: 1 });
    expect(limiter.take("a", 0).allowed).toBe(true);
    expect(limiter.take("a", 0).allowed).toBe(false);
    expect(limiter.take("b", 0).allowed).toBe(true);
  });

  test("remembers at most maxKeys, forgetting the one idle longest", () => {
    const limiter = new KeyedRateLimiter({ perMinute: 1 }, 2);
    limiter.take("a", 0);
    limiter.take("b", 1);
    limiter.take("a", 2); // refused, but a is now the most recent
    limiter.take("c", 3); // forgets b
    expect(limiter.take("a", 4).allowed).toBe(false);
    expect(limiter.take("b", 5).allowed).toBe(true);
  });

  test("a clock going backwards does not mint tokens; Infinity allows everything; 0 is refused", () => {
    const limiter = new KeyedRateLimiter({ perMinute: 1 });
    limiter.take("a", 60_000);
    expect(limiter.take("a", 0).allowed).toBe(false);
    const open = new KeyedRateLimiter({ perMinute: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 1000; i++) expect(open.take("a", 0).allowed).toBe(true);
    expect(() => new KeyedRateLimiter({ perMinute: 0 })).toThrow("perMinute must be positive");
  });
});
