/**
 * Token buckets per key (a session id, a client address), held in memory with a bounded number of
 * keys. Used where unauthenticated callers could otherwise make the gateway spend without limit.
 */

export interface RateLimit {
  /** Requests allowed in a burst, and per minute on average after it. */
  perMinute: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class KeyedRateLimiter {
  /** Insertion-ordered by last use, so the first key is the one idle longest. */
  private readonly buckets = new Map<string, Bucket>();
  private readonly refillPerMs: number;

  /**
   * @param limit `perMinute` must be a positive number; Infinity lets everything through.
   * @param maxKeys keys remembered (default 10 000); the one idle longest is forgotten first, which
   *   at worst hands it a fresh burst.
   */
  constructor(
    private readonly limit: RateLimit,
    private readonly maxKeys = 10_000,
  ) {
    if (!(limit.perMinute > 0)) throw new RangeError(`perMinute must be positive (got ${limit.perMinute})`);
    this.refillPerMs = limit.perMinute / 60_000;
  }

  /** Takes one token for `key` at `nowMs`; refused, it says how long until the next one. */
  take(key: string, nowMs: number): RateDecision {
    if (this.limit.perMinute === Number.POSITIVE_INFINITY) return { allowed: true };
    const bucket = this.buckets.get(key) ?? { tokens: this.limit.perMinute, updatedMs: nowMs };
    this.buckets.delete(key);
    const elapsedMs = Math.max(0, nowMs - bucket.updatedMs);
    bucket.tokens = Math.min(this.limit.perMinute, bucket.tokens + elapsedMs * this.refillPerMs);
    bucket.updatedMs = nowMs;
    this.buckets.set(key, bucket);
    while (this.buckets.size > this.maxKeys) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) break;
      this.buckets.delete(oldest);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterMs: Math.ceil((1 - bucket.tokens) / this.refillPerMs) };
  }
}
