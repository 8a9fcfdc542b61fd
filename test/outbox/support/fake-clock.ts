import type { Clock } from "../../../src/util/clock.ts";

interface Timer {
  atMs: number;
  order: number;
  resolve(): void;
}

/** Lets every promise chain that is ready run (SQLite calls are synchronous, so this is enough). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A clock that moves only when told to, firing sleeps in time order. */
export class FakeClock implements Clock {
  private nowMs: number;
  private timers: Timer[] = [];
  private order = 0;

  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer: Timer = {
        atMs: this.nowMs + Math.max(0, ms),
        order: this.order++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.timers.push(timer);
    });
  }

  /** Milliseconds until the next sleep ends, or null when nothing sleeps. */
  nextTimerInMs(): number | null {
    const next = this.earliest();
    return next === undefined ? null : next.atMs - this.nowMs;
  }

  /** Moves time forward by `ms`, firing each sleep at its own time and settling in between. */
  async advance(ms: number): Promise<void> {
    const targetMs = this.nowMs + ms;
    await settle();
    for (;;) {
      const next = this.earliest();
      if (next === undefined || next.atMs > targetMs) break;
      this.fire(next);
      await settle();
    }
    this.nowMs = targetMs;
    await settle();
  }

  /**
   * Fires sleeps one by one until `done()` holds. Fails when nothing is left to fire or after
   * `maxMs` of fake time, naming the condition that never came true.
   */
  async runUntil(done: () => boolean, what: string, maxMs = 3_600_000): Promise<void> {
    const deadlineMs = this.nowMs + maxMs;
    await settle();
    while (!done()) {
      const next = this.earliest();
      if (next === undefined) throw new Error(`Nothing left to run, and still not: ${what}`);
      if (next.atMs > deadlineMs) throw new Error(`${maxMs} ms of fake time passed, and still not: ${what}`);
      this.fire(next);
      await settle();
    }
  }

  private earliest(): Timer | undefined {
    return [...this.timers].sort((a, b) => a.atMs - b.atMs || a.order - b.order)[0];
  }

  private fire(timer: Timer): void {
    this.timers = this.timers.filter((t) => t !== timer);
    this.nowMs = Math.max(this.nowMs, timer.atMs);
    timer.resolve();
  }
}
