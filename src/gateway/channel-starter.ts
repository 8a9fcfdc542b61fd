import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { Logger } from "../util/log.ts";
import type { ReadinessCheck } from "./http/types.ts";

/** How long to wait before the next start attempt of a channel that failed `failures` times. */
export function channelRetryDelayMs(failures: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, failures - 1));
}

/**
 * Starts the channels so that one platform's outage is not the gateway's: a channel that cannot
 * start (its API unreachable, a refused token) is logged, reported as degraded, and started again
 * with backoff while the other channels, the web chat and the operator API run.
 */
export class ChannelStarter {
  private readonly failures = new Map<ChannelName, { count: number; error: string; retryAtMs: number }>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(
    private readonly adapters: ReadonlyMap<ChannelName, ChannelAdapter>,
    private readonly startOne: (name: ChannelName, adapter: ChannelAdapter) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** Tries every channel once; those that fail keep trying in the background. */
  async startAll(): Promise<void> {
    for (const [name, adapter] of this.adapters) await this.attempt(name, adapter);
  }

  check(name: ChannelName, adapter: ChannelAdapter): ReadinessCheck {
    const failure = this.failures.get(name);
    if (failure)
      return {
        ok: false,
        degraded: true,
        detail: `not started: ${failure.error}; next attempt in ${Math.max(0, Math.ceil((failure.retryAtMs - Date.now()) / 1000))} s`,
      };
    return { ok: adapter.isConnected() };
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private async attempt(name: ChannelName, adapter: ChannelAdapter): Promise<void> {
    if (this.stopped) return;
    try {
      await this.startOne(name, adapter);
      const failed = this.failures.get(name);
      this.failures.delete(name);
      if (failed) this.logger.info("channel.recovered", { channel: name, attempts: failed.count + 1 });
    } catch (error) {
      const count = (this.failures.get(name)?.count ?? 0) + 1;
      const delayMs = channelRetryDelayMs(count);
      const message = error instanceof Error ? error.message : String(error);
      this.failures.set(name, { count, error: message, retryAtMs: Date.now() + delayMs });
      this.logger.warn("channel.start_failed", {
        channel: name,
        attempt: count,
        retryInMs: delayMs,
        error,
        hint: `the gateway runs without ${name} until it starts; check the token and that the platform's API is reachable`,
      });
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.attempt(name, adapter);
      }, delayMs);
      this.timers.add(timer);
    }
  }
}
