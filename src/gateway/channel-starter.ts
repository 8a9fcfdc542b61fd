import type { ChannelAdapter } from "../../channels/types.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { ReadinessCheck } from "./readiness.ts";

/** How long to wait before the next start attempt of a channel that failed `failures` times. */
export function channelRetryDelayMs(failures: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, failures - 1));
}

export interface ChannelStarterOptions {
  /**
   * The gateway's adapters by slot (a channel, or `channel:account` for a named account); a failed
   * one is replaced here by a fresh one. Each slot starts, fails and retries on its own.
   */
  adapters: Map<string, ChannelAdapter>;
  /** Fresh adapters per slot; a slot without one (the web chat) is retried as it is. */
  factories: ReadonlyMap<string, () => ChannelAdapter>;
  /** Starts one adapter; rejects when it did not start. */
  startOne(name: string, adapter: ChannelAdapter): Promise<void>;
  logger: Logger;
  /** Times the backoff; the system clock by default. */
  clock?: Clock;
}

/**
 * Starts the channels so that one platform's outage is not the gateway's: a channel that cannot
 * start (its API unreachable, a refused token) is logged, reported as degraded, and started again
 * with backoff while the other channels, the web chat and the operator API run.
 *
 * Each new attempt uses a fresh adapter from the channel's factory, put in `adapters` (the map the
 * rest of the gateway reads) as soon as the failed one is let go: a platform client whose start
 * failed may refuse to start again (discord.js logs in once per client).
 */
export class ChannelStarter {
  private readonly failures = new Map<string, { count: number; error: string; retryAtMs: number }>();
  /** Ends the backoff waits on stop(). */
  private readonly stopping = new AbortController();
  private readonly adapters: Map<string, ChannelAdapter>;
  private readonly options: ChannelStarterOptions;
  private readonly clock: Clock;

  constructor(options: ChannelStarterOptions) {
    this.options = options;
    this.adapters = options.adapters;
    this.clock = options.clock ?? systemClock;
  }

  /** Tries every channel once; those that fail keep trying in the background. */
  async startAll(): Promise<void> {
    for (const name of [...this.adapters.keys()]) await this.attempt(name);
  }

  /** Starts one slot added while the gateway runs (a Slack workspace just installed); a failure retries as at start. */
  async startSlot(name: string): Promise<void> {
    await this.attempt(name);
  }

  check(name: string, adapter: ChannelAdapter): ReadinessCheck {
    const failure = this.failures.get(name);
    if (failure)
      return {
        ok: false,
        degraded: true,
        detail: `not started: ${failure.error}; next attempt in ${Math.max(0, Math.ceil((failure.retryAtMs - this.clock.now()) / 1000))} s`,
      };
    return { ok: adapter.isConnected() };
  }

  stop(): void {
    this.stopping.abort();
  }

  private async attempt(name: string): Promise<void> {
    const adapter = this.adapters.get(name);
    if (this.stopping.signal.aborted || !adapter) return;
    try {
      await this.options.startOne(name, adapter);
      const failed = this.failures.get(name);
      this.failures.delete(name);
      if (failed)
        this.options.logger.info("channel.recovered", { channel: name, attempts: failed.count + 1 });
    } catch (error) {
      const count = (this.failures.get(name)?.count ?? 0) + 1;
      const delayMs = channelRetryDelayMs(count);
      const message = error instanceof Error ? error.message : String(error);
      this.failures.set(name, { count, error: message, retryAtMs: this.clock.now() + delayMs });
      this.options.logger.warn("channel.start_failed", {
        channel: name,
        attempt: count,
        retryInMs: delayMs,
        error,
        hint: `the gateway runs without ${name} until it starts; check the token and that the platform's API is reachable`,
      });
      this.replace(name, adapter);
      this.clock.sleep(delayMs, this.stopping.signal).then(
        () => void this.attempt(name),
        () => undefined,
      );
    }
  }

  /** Puts a fresh adapter in place of one whose start failed, and lets the failed one go. */
  private replace(name: string, failed: ChannelAdapter): void {
    const make = this.options.factories.get(name);
    if (!make) return;
    let fresh: ChannelAdapter;
    try {
      fresh = make();
    } catch (error) {
      // The next attempt tries the failed adapter again and, failing, the factory again.
      this.options.logger.error("channel.create_failed", { channel: name, error });
      return;
    }
    this.adapters.set(name, fresh);
    // Not awaited: a client that never connected may take its time to let go of its sockets.
    void failed
      .stop()
      .catch((error) => this.options.logger.debug("channel.failed_client_stop", { channel: name, error }));
  }
}
