/**
 * Wall-clock time, sleeping and timers: the one timer port. Everything that waits takes a Clock so
 * tests can drive time (test/support/fake-clock.ts) instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `delayMs` (clamped to 0…MAX_TIMER_DELAY_MS). */
  setTimer(delayMs: number, fn: () => void, options?: TimerOptions): Timer;
  /** Calls `fn` every `intervalMs` (clamped to 1…MAX_TIMER_DELAY_MS) until cancelled. */
  every(intervalMs: number, fn: () => void, options?: TimerOptions): Timer;
}

export interface TimerOptions {
  /** The timer does not keep the process alive (a background chore, not awaited work). Default false. */
  unref?: boolean;
}

/** A timer set by a Clock. */
export interface Timer {
  /** Stops it. Idempotent; after a one-shot timer fired it does nothing. */
  cancel(): void;
  /**
   * Restarts the countdown from now with the same delay; a one-shot timer that fired is armed
   * again, a cancelled one stays cancelled.
   */
  refresh(): void;
}

/** setTimeout's delay is a signed 32-bit integer; a longer one fires at once. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** A one-shot delay as setTimeout takes it: never negative, never past the 32-bit limit. */
export function clampDelayMs(delayMs: number): number {
  return Math.min(Math.max(0, delayMs), MAX_TIMER_DELAY_MS);
}

/** An interval as setInterval takes it: at least 1 ms (as Node and Bun treat 0), never past the 32-bit limit. */
export function clampIntervalMs(intervalMs: number): number {
  return Math.min(Math.max(1, intervalMs), MAX_TIMER_DELAY_MS);
}

function systemTimer(handle: ReturnType<typeof setTimeout>, options: TimerOptions | undefined): Timer {
  if (options?.unref) handle.unref?.();
  let cancelled = false;
  return {
    cancel: () => {
      cancelled = true;
      clearTimeout(handle);
    },
    refresh: () => {
      if (!cancelled) handle.refresh();
    },
  };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
  setTimer: (delayMs, fn, options) => systemTimer(setTimeout(fn, clampDelayMs(delayMs)), options),
  every: (intervalMs, fn, options) => systemTimer(setInterval(fn, clampIntervalMs(intervalMs)), options),
};
