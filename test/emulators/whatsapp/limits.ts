/**
 * The Cloud API's sending rules that depend on time: the 24-hour customer service window (opened
 * by each message the user sends), the pair rate (about one message every 6 s from the business
 * to one user: 131056) and the number's throughput (80 messages/s by default: 130429). Only
 * accepted sends count toward the limits.
 */

export interface LimitsConfig {
  /** How long after a user's last message free-form messages may be sent. Default 24 h. */
  serviceWindowMs: number;
  /** Minimum spacing of messages to one user, in ms; null disables the pair rate. Default 6000. */
  pairIntervalMs: number | null;
  /** Messages per second for the number; null disables the throughput limit. Default 80. */
  throughputPerSecond: number | null;
}

export const DEFAULT_LIMITS: LimitsConfig = {
  serviceWindowMs: 24 * 60 * 60 * 1000,
  pairIntervalMs: 6_000,
  throughputPerSecond: 80,
};

export interface LimitStats {
  throughputRejected: number;
  pairRejected: Record<string, number>;
  windowRejected: Record<string, number>;
}

export class SendLimits {
  private readonly lastInboundMs = new Map<string, number>();
  private readonly lastSendMs = new Map<string, number>();
  /** Accepted sends in the last second, oldest first. */
  private recentSends: number[] = [];
  private readonly stats: LimitStats = { throughputRejected: 0, pairRejected: {}, windowRejected: {} };

  constructor(
    public config: LimitsConfig,
    private readonly now: () => number,
  ) {}

  /** A message from `waId` at `atMs` (re)opens its service window. */
  openWindow(waId: string, atMs: number): void {
    const previous = this.lastInboundMs.get(waId) ?? Number.NEGATIVE_INFINITY;
    this.lastInboundMs.set(waId, Math.max(previous, atMs));
  }

  /** When `waId`'s window closes (ms since epoch), or null when it never opened. */
  windowClosesAtMs(waId: string): number | null {
    const last = this.lastInboundMs.get(waId);
    return last === undefined ? null : last + this.config.serviceWindowMs;
  }

  windowOpen(waId: string): boolean {
    const closes = this.windowClosesAtMs(waId);
    return closes !== null && this.now() < closes;
  }

  countWindowRefusal(waId: string): void {
    this.stats.windowRejected[waId] = (this.stats.windowRejected[waId] ?? 0) + 1;
  }

  /** False when the number already sent its per-second share; counts the refusal. */
  admitThroughput(): boolean {
    const perSecond = this.config.throughputPerSecond;
    if (perSecond === null) return true;
    const nowMs = this.now();
    this.recentSends = this.recentSends.filter((at) => nowMs - at < 1_000);
    if (this.recentSends.length < perSecond) return true;
    this.stats.throughputRejected += 1;
    return false;
  }

  /** False when `waId` got an accepted message less than `pairIntervalMs` ago; counts the refusal. */
  admitPair(waId: string): boolean {
    const interval = this.config.pairIntervalMs;
    const last = this.lastSendMs.get(waId);
    if (interval === null || last === undefined || this.now() - last >= interval) return true;
    this.stats.pairRejected[waId] = (this.stats.pairRejected[waId] ?? 0) + 1;
    return false;
  }

  /** An accepted send to `waId`: it counts toward both limits from now. */
  recordSend(waId: string): void {
    const nowMs = this.now();
    this.lastSendMs.set(waId, nowMs);
    this.recentSends.push(nowMs);
  }

  snapshot(): LimitStats {
    return structuredClone(this.stats);
  }

  /** Forgets windows, sends and counts. */
  reset(): void {
    this.lastInboundMs.clear();
    this.lastSendMs.clear();
    this.recentSends = [];
    this.stats.throughputRejected = 0;
    this.stats.pairRejected = {};
    this.stats.windowRejected = {};
  }
}
