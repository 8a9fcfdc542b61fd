import { FaultPlan as SharedFaultPlan } from "../fault-plan.ts";
import type { SlackFault } from "./types.ts";

export class FaultPlan extends SharedFaultPlan<string, SlackFault> {}

/**
 * Slack's ~1 message per second per channel: a post to a channel within `intervalMs` of the last
 * accepted one gets a 429. Counts the 429s it handed out per channel.
 */
export class ChannelRateLimiter {
  #intervalMs: number | null = null;
  readonly #lastAcceptedMs = new Map<string, number>();
  readonly #rejections = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  configure(intervalMs: number | null): void {
    this.#intervalMs = intervalMs;
    this.#lastAcceptedMs.clear();
  }

  /** Null when the post may go ahead (and records it), else the Retry-After in whole seconds. */
  admit(channel: string): number | null {
    if (this.#intervalMs === null) return null;
    const nowMs = this.now();
    const last = this.#lastAcceptedMs.get(channel);
    if (last !== undefined && nowMs - last < this.#intervalMs) {
      this.#rejections.set(channel, (this.#rejections.get(channel) ?? 0) + 1);
      return Math.max(1, Math.ceil((this.#intervalMs - (nowMs - last)) / 1000));
    }
    this.#lastAcceptedMs.set(channel, nowMs);
    return null;
  }

  rejections(channel?: string): number {
    if (channel !== undefined) return this.#rejections.get(channel) ?? 0;
    let total = 0;
    for (const count of this.#rejections.values()) total += count;
    return total;
  }

  reset(): void {
    this.#lastAcceptedMs.clear();
    this.#rejections.clear();
  }
}
