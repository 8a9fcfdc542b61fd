/** Discord's per-channel message bucket: at most `limit` creates per `windowMs` in one channel. */
export interface ChannelRateLimit {
  limit: number;
  windowMs: number;
}

export type RateDecision =
  | { allowed: true; remaining: number; resetAfterMs: number }
  | { allowed: false; retryAfterMs: number };

/** A sliding-window counter per channel, driven by the emulator's clock. */
export class ChannelRateLimiter {
  private readonly creates = new Map<string, number[]>();

  constructor(
    private readonly rule: ChannelRateLimit,
    private readonly now: () => number,
  ) {}

  get limit(): number {
    return this.rule.limit;
  }

  /** Counts one create in `channelId` when allowed; a refused create is not counted. */
  tryAcquire(channelId: string): RateDecision {
    const nowMs = this.now();
    const recent = (this.creates.get(channelId) ?? []).filter((at) => at > nowMs - this.rule.windowMs);
    const oldest = recent[0];
    if (recent.length >= this.rule.limit && oldest !== undefined) {
      this.creates.set(channelId, recent);
      return { allowed: false, retryAfterMs: oldest + this.rule.windowMs - nowMs };
    }
    recent.push(nowMs);
    this.creates.set(channelId, recent);
    const first = recent[0] ?? nowMs;
    return {
      allowed: true,
      remaining: this.rule.limit - recent.length,
      resetAfterMs: first + this.rule.windowMs - nowMs,
    };
  }
}
