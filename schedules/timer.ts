/** One-shot timers, injected so tests can drive time. */
export interface Timer {
  /** Calls `callback` once after `delayMs`; the handle cancels it. */
  set(delayMs: number, callback: () => void): TimerHandle;
  clear(handle: TimerHandle): void;
}

export type TimerHandle = { readonly id: unknown };

/** setTimeout's delay is a signed 32-bit integer; a longer one fires at once. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

export const systemTimer: Timer = {
  set(delayMs, callback) {
    return { id: setTimeout(callback, Math.min(Math.max(0, delayMs), MAX_TIMER_DELAY_MS)) };
  },
  clear(handle) {
    clearTimeout(handle.id as ReturnType<typeof setTimeout>);
  },
};
