import type { ChannelLimits } from "../channels/types.ts";
import type { Clock } from "../src/util/clock.ts";

/** Tokens refill continuously; a call takes one. Starts full. */
class TokenBucket {
  private tokens: number;
  private updatedAtMs: number;

  constructor(
    private readonly capacity: number,
    private readonly refillPerMs: number,
    nowMs: number,
  ) {
    this.tokens = capacity;
    this.updatedAtMs = nowMs;
  }

  /** Milliseconds until one token is available (0: now). */
  waitMs(nowMs: number): number {
    this.refill(nowMs);
    if (this.tokens >= 1) return 0;
    return Math.ceil((1 - this.tokens) / this.refillPerMs);
  }

  take(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  private refill(nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - this.updatedAtMs);
    this.tokens = Number.isFinite(this.refillPerMs)
      ? Math.min(this.capacity, this.tokens + elapsedMs * this.refillPerMs)
      : this.capacity;
    this.updatedAtMs = nowMs;
  }
}

/** One ordered delivery lane: a chat (target) of one bot account. */
export interface RateLane {
  chatKey: string;
  accountKey: string;
  limits: Pick<ChannelLimits, "perChatIntervalMs" | "perAccountPerSecond">;
}

/**
 * Spaces platform calls per chat (one per `perChatIntervalMs`) and per account
 * (`perAccountPerSecond`, bursting up to one second's worth), and holds back a chat or a whole
 * account that the platform told to wait (429).
 */
export class DeliveryRateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly blockedUntilMs = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Resolves when a call on `lane` is allowed and takes its tokens; rejects if `signal` aborts first. */
  async acquire(lane: RateLane, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const nowMs = this.clock.now();
      const chat = this.bucket(`chat:${lane.chatKey}`, 1, perMs(1, lane.limits.perChatIntervalMs), nowMs);
      const perSecond = lane.limits.perAccountPerSecond;
      const account = this.bucket(
        `account:${lane.accountKey}`,
        Math.max(1, perSecond),
        perMs(perSecond, 1000),
        nowMs,
      );
      const waitMs = Math.max(
        chat.waitMs(nowMs),
        account.waitMs(nowMs),
        (this.blockedUntilMs.get(lane.chatKey) ?? 0) - nowMs,
        (this.blockedUntilMs.get(lane.accountKey) ?? 0) - nowMs,
      );
      if (waitMs <= 0) {
        chat.take(nowMs);
        account.take(nowMs);
        return;
      }
      await this.clock.sleep(waitMs, signal);
    }
  }

  /** No call on `key` (a chatKey or accountKey) before `untilMs`. */
  block(key: string, untilMs: number): void {
    this.blockedUntilMs.set(key, Math.max(untilMs, this.blockedUntilMs.get(key) ?? 0));
  }

  private bucket(name: string, capacity: number, refillPerMs: number, nowMs: number): TokenBucket {
    let bucket = this.buckets.get(name);
    if (!bucket) {
      bucket = new TokenBucket(capacity, refillPerMs, nowMs);
      this.buckets.set(name, bucket);
    }
    return bucket;
  }
}

/** `tokens` per `intervalMs`; a non-positive interval or rate means unlimited. */
function perMs(tokens: number, intervalMs: number): number {
  if (intervalMs <= 0 || tokens <= 0) return Number.POSITIVE_INFINITY;
  return tokens / intervalMs;
}
