import { KeyedRateLimiter } from "../util/rate-limit.ts";

/** What the flood limit says about one inbound message. */
export type FloodDecision =
  | { kind: "allowed" }
  /** `tell`: the first refusal of this burst, which gets one reply; the rest are only recorded. */
  | { kind: "refused"; tell: boolean; retryAfterMs: number };

/**
 * The per-user inbound rate limit: token buckets per (surface, user), `perMinute` each (a burst of
 * that many, then that many a minute). A user going too fast is told once per burst: the next
 * refusal after an allowed message tells again. Held in memory: a restart hands everyone a fresh
 * burst, which only errs on the side of answering.
 */
export class FloodLimit {
  private readonly limiters = new Map<number, KeyedRateLimiter>();
  private readonly told = new Set<string>();

  check(key: string, perMinute: number, nowMs: number): FloodDecision {
    let limiter = this.limiters.get(perMinute);
    if (!limiter) {
      limiter = new KeyedRateLimiter({ perMinute });
      this.limiters.set(perMinute, limiter);
    }
    const decision = limiter.take(key, nowMs);
    if (decision.allowed) {
      this.told.delete(key);
      return { kind: "allowed" };
    }
    const tell = !this.told.has(key);
    if (tell) {
      this.told.add(key);
      // Bounded like the buckets: forgetting a key only means telling that user once more.
      if (this.told.size > 10_000) this.told.delete(this.told.values().next().value!);
    }
    return { kind: "refused", tell, retryAfterMs: decision.retryAfterMs };
  }
}
