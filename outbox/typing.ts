import type { ChannelAdapter } from "../channels/types.ts";
import type { Clock } from "../src/util/clock.ts";
import type { Logger } from "../src/util/log.ts";

/** Platforms show "typing…" for about 5 s after one call; repeating a little sooner keeps it steady. */
export const DEFAULT_TYPING_INTERVAL_MS = 4000;

export interface TypingIndicator {
  /** Stops repeating; idempotent. */
  stop(): void;
}

export interface TypingIndicatorOptions {
  clock: Clock;
  intervalMs?: number;
  logger: Logger;
}

/**
 * Shows "typing…" in `target` now and every `intervalMs` until stopped. A failed typing call is
 * logged once and otherwise ignored: it is decoration, never worth failing or delaying a run.
 * Does nothing when the adapter cannot show typing.
 */
export function createTypingIndicator(
  adapter: ChannelAdapter,
  target: string,
  options: TypingIndicatorOptions,
): TypingIndicator {
  const stopped = new AbortController();
  if (!adapter.typing) return { stop: () => stopped.abort() };
  const typing = adapter.typing.bind(adapter);
  const intervalMs = options.intervalMs ?? DEFAULT_TYPING_INTERVAL_MS;
  let warned = false;

  void (async function repeatTyping() {
    while (!stopped.signal.aborted) {
      try {
        await typing(target);
      } catch (error) {
        if (!warned) {
          warned = true;
          options.logger.warn("outbox.typing_failed", {
            channel: adapter.channel,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      try {
        await options.clock.sleep(intervalMs, stopped.signal);
      } catch {
        return;
      }
    }
  })();

  return { stop: () => stopped.abort() };
}
