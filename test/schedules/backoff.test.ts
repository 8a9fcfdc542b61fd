import { describe, expect, test } from "bun:test";
import { decideRetry, retryDelayMs } from "../../schedules/backoff.ts";

describe("retry backoff", () => {
  test("1, 2, 4, 8, 16, 32, then 60 s for every later attempt", () => {
    const delays = Array.from({ length: 10 }, (_, i) => retryDelayMs(i + 1) / 1000);
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
    expect(retryDelayMs(1000)).toBe(60_000);
  });

  test("rejects attempt numbers that are not positive integers", () => {
    expect(() => retryDelayMs(0)).toThrow("failedAttempts must be an integer ≥ 1, got 0");
    expect(() => retryDelayMs(1.5)).toThrow(RangeError);
  });

  test("gives up once the attempt that failed was the last allowed one", () => {
    expect(decideRetry(1, 10)).toEqual({ retry: true, delayMs: 1000 });
    expect(decideRetry(9, 10)).toEqual({ retry: true, delayMs: 60_000 });
    expect(decideRetry(10, 10)).toEqual({ retry: false });
    expect(decideRetry(1, 1)).toEqual({ retry: false });
  });

  test("a retry-after hint lengthens the delay up to the 60 s ceiling, never shortens it", () => {
    expect(decideRetry(1, 10, 5000)).toEqual({ retry: true, delayMs: 5000 });
    expect(decideRetry(5, 10, 5000)).toEqual({ retry: true, delayMs: 16_000 });
    expect(decideRetry(1, 10, 10 * 60_000)).toEqual({ retry: true, delayMs: 60_000 });
  });
});
