import type { ChannelLimits } from "../channels/types.ts";
import type { Clock } from "../src/util/clock.ts";

/**
 * Added to every window: the clock reads whole milliseconds while the platform counts finer, so a
 * call timed exactly one window after the last could reach it a fraction of a millisecond early.
 * A few milliseconds per window cost under 0.5% of the rate and take every rounding off the edge.
 */
export const RATE_WINDOW_MARGIN_MS = 3;

/**
 * At most `limit` calls in any `windowMs` (plus the margin), the way platforms count (Telegram: 1
 * per second per chat, 30 per second per bot; a sliding window, so a burst is never followed by an
 * early refill). A call counts from its end; while in flight it stays in the window however long it
 * takes, since the platform may count it at any moment until it answers.
 */
class SlidingWindow {
  /** Counted calls: ended ones by their end, in-flight ones with `atMs` null. */
  private readonly slots: Slot[] = [];
  private readonly spanMs: number;

  constructor(
    private readonly limit: number,
    windowMs: number,
  ) {
    this.spanMs = windowMs + RATE_WINDOW_MARGIN_MS;
  }

  /** Milliseconds until one more call fits (0: now). An in-flight call leaves no sooner than a span from now. */
  waitMs(nowMs: number): number {
    this.prune(nowMs);
    if (this.slots.length < this.limit) return 0;
    // The call that frees room is the (excess + 1)-th to leave the window.
    const leaving = this.slots.map((slot) => (slot.atMs ?? nowMs) + this.spanMs).sort((a, b) => a - b);
    return Math.max(0, leaving[this.slots.length - this.limit]! - nowMs);
  }

  take(): Slot {
    const slot: Slot = { atMs: null };
    this.slots.push(slot);
    return slot;
  }

  /** The call of `slot` ended at `nowMs`: it counts from then. */
  end(slot: Slot, nowMs: number): void {
    slot.atMs = nowMs;
  }

  /** True when nothing is in flight or left in the window, so the window can be forgotten. */
  isIdle(nowMs: number): boolean {
    this.prune(nowMs);
    return this.slots.length === 0;
  }

  private prune(nowMs: number): void {
    for (let i = this.slots.length - 1; i >= 0; i--) {
      const atMs = this.slots[i]!.atMs;
      if (atMs !== null && atMs + this.spanMs <= nowMs) this.slots.splice(i, 1);
    }
  }
}

interface Slot {
  /** When the call ended; null while it is in flight. */
  atMs: number | null;
}

/** One ordered delivery lane: a chat (target) of one bot account. `chatKey` is the outbox target key. */
export interface RateLane {
  chatKey: string;
  accountKey: string;
  limits: Pick<ChannelLimits, "perChatIntervalMs" | "perAccountPerSecond">;
}

/** A call's place in its windows; report the call's end so the platform's counting is covered. */
export interface RatePermit {
  /**
   * The call ended (answered or failed): its slots count from now. The platform counted the call at
   * some moment between its start and now, so only from now is its window certain to be over.
   * Until then the call holds its slots.
   */
  ended(): void;
}

/**
 * Spaces platform calls per chat (one per `perChatIntervalMs`) and per account
 * (`perAccountPerSecond` in any second), and holds back a chat or a whole account that the
 * platform told to wait (429). Windows are measured from each call's end, not its start, so
 * network delay cannot squeeze two calls into one of the platform's windows, and each is
 * `RATE_WINDOW_MARGIN_MS` longer than the platform's.
 */
export class DeliveryRateLimiter {
  private readonly windows = new Map<string, SlidingWindow>();
  private readonly blockedUntilMs = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Resolves when a call on `lane` is allowed and takes its slots; rejects if `signal` aborts first. */
  async acquire(lane: RateLane, signal?: AbortSignal): Promise<RatePermit> {
    for (;;) {
      const nowMs = this.clock.now();
      const chat = this.chatWindow(lane);
      const account = this.accountWindow(lane);
      const waitMs = Math.max(
        this.chatWaitMs(lane, nowMs),
        account?.waitMs(nowMs) ?? 0,
        (this.blockedUntilMs.get(lane.accountKey) ?? 0) - nowMs,
      );
      if (waitMs <= 0) {
        const taken = [chat, account].flatMap((window) => (window ? [{ window, slot: window.take() }] : []));
        let ended = false;
        return {
          ended: () => {
            if (ended) return;
            ended = true;
            const endedAtMs = this.clock.now();
            for (const { window, slot } of taken) window.end(slot, endedAtMs);
          },
        };
      }
      await this.clock.sleep(waitMs, signal);
    }
  }

  /** No call on `key` (a chatKey or accountKey) before `untilMs`. */
  block(key: string, untilMs: number): void {
    this.blockedUntilMs.set(key, Math.max(untilMs, this.blockedUntilMs.get(key) ?? 0));
  }

  /**
   * Chats that cannot take a call at `nowMs` (window full or blocked), with when they can: the
   * worker leaves them alone instead of parking a delivery slot in `acquire`. Forgets idle chats.
   */
  heldChats(nowMs: number): Map<string, number> {
    const held = new Map<string, number>();
    for (const [name, window] of this.windows) {
      if (!name.startsWith("chat:")) continue;
      if (window.isIdle(nowMs)) {
        this.windows.delete(name);
        continue;
      }
      const waitMs = window.waitMs(nowMs);
      if (waitMs > 0) held.set(name.slice("chat:".length), nowMs + waitMs);
    }
    for (const [key, untilMs] of this.blockedUntilMs) {
      if (untilMs <= nowMs) this.blockedUntilMs.delete(key);
      else held.set(key, Math.max(untilMs, held.get(key) ?? 0));
    }
    return held;
  }

  private chatWaitMs(lane: RateLane, nowMs: number): number {
    return Math.max(
      this.chatWindow(lane)?.waitMs(nowMs) ?? 0,
      (this.blockedUntilMs.get(lane.chatKey) ?? 0) - nowMs,
    );
  }

  private chatWindow(lane: RateLane): SlidingWindow | null {
    const intervalMs = lane.limits.perChatIntervalMs;
    return intervalMs > 0 ? this.window(`chat:${lane.chatKey}`, 1, intervalMs) : null;
  }

  private accountWindow(lane: RateLane): SlidingWindow | null {
    const perSecond = lane.limits.perAccountPerSecond;
    if (perSecond <= 0) return null;
    // A fractional rate (0.5/s) is one call per 1000/rate ms; a whole one, that many per second.
    return Number.isInteger(perSecond)
      ? this.window(`account:${lane.accountKey}`, perSecond, 1000)
      : this.window(`account:${lane.accountKey}`, 1, 1000 / perSecond);
  }

  private window(name: string, limit: number, windowMs: number): SlidingWindow {
    let window = this.windows.get(name);
    if (!window) {
      window = new SlidingWindow(limit, windowMs);
      this.windows.set(name, window);
    }
    return window;
  }
}
