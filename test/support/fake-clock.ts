import {
  type Clock,
  clampDelayMs,
  clampIntervalMs,
  type Timer,
  type TimerOptions,
} from "../../src/util/clock.ts";

/** 2023-11-14T22:13:20Z: a round, fixed start for tests that do not care which day it is. */
const DEFAULT_START_MS = 1_700_000_000_000;

export interface FakeClockOptions {
  /**
   * sleep() does not wait for advance(): it resolves on the next turn of the event loop and time
   * stays where it is. For code that sleeps between real I/O (a polling loop against an emulator,
   * a purge polling for its runs to stop) while the test has nothing to advance. Timers set with
   * setTimer/every still wait for advance(). Default false.
   */
  instantSleeps?: boolean;
}

interface Pending {
  atMs: number;
  /** Set order: of two timers due at the same time, the earlier set fires first. */
  seq: number;
  fire(): void;
}

/**
 * Lets every promise chain that is ready run, a macrotask turn at a time (SQLite calls are
 * synchronous, so this is enough for work a timer started; PostgreSQL answers over a socket and
 * needs a real-time wait).
 */
export async function settle(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A Clock whose time moves only when a test says so. advance()/advanceTo()/runUntil() fire due
 * timers and sleeps one at a time, in due-time order (set order on ties), with `now()` at each one's
 * due time, and let the work each starts settle before the next.
 */
export class FakeClock implements Clock {
  /** Every length sleep() was asked for, in call order (backoff tests read it). */
  readonly requestedSleepsMs: number[] = [];
  private nowMs: number;
  private seq = 0;
  private readonly pending = new Set<Pending>();
  private readonly instantSleeps: boolean;

  constructor(startMs = DEFAULT_START_MS, options: FakeClockOptions = {}) {
    this.nowMs = startMs;
    this.instantSleeps = options.instantSleeps ?? false;
  }

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.requestedSleepsMs.push(ms);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      const done = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const timer = this.instantSleeps
        ? this.instantTimer(done)
        : this.schedule(clampDelayMs(ms), done, false);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  setTimer(delayMs: number, fn: () => void, _options?: TimerOptions): Timer {
    return this.schedule(clampDelayMs(delayMs), fn, false);
  }

  every(intervalMs: number, fn: () => void, _options?: TimerOptions): Timer {
    return this.schedule(clampIntervalMs(intervalMs), fn, true);
  }

  /** Milliseconds until the next timer or sleep is due, or null when nothing waits. */
  nextTimerInMs(): number | null {
    const next = this.earliest();
    return next === undefined ? null : next.atMs - this.nowMs;
  }

  /** Due times of the timers and sleeps still waiting, earliest first. */
  pendingAt(): number[] {
    return [...this.pending].map((t) => t.atMs).sort((a, b) => a - b);
  }

  /** Moves time forward by `ms`, firing everything due on the way (see the class). */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.nowMs + ms);
  }

  /** Moves time forward to `targetMs` (never back), firing everything due on the way. */
  async advanceTo(targetMs: number): Promise<void> {
    await settle();
    for (;;) {
      const next = this.earliest();
      if (next === undefined || next.atMs > targetMs) break;
      this.fire(next);
      await settle();
    }
    this.nowMs = Math.max(this.nowMs, targetMs);
  }

  /**
   * Fires timers one by one until `done()` holds. Fails when nothing is left to fire or after
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

  private schedule(delayMs: number, fn: () => void, repeat: boolean): Timer {
    let cancelled = false;
    const entry: Pending = {
      atMs: this.nowMs + delayMs,
      seq: this.seq++,
      fire: () => {
        if (repeat) this.arm(entry, delayMs);
        fn();
      },
    };
    this.pending.add(entry);
    return {
      cancel: () => {
        cancelled = true;
        this.pending.delete(entry);
      },
      refresh: () => {
        if (!cancelled) this.arm(entry, delayMs);
      },
    };
  }

  private arm(entry: Pending, delayMs: number): void {
    entry.atMs = this.nowMs + delayMs;
    entry.seq = this.seq++;
    this.pending.add(entry);
  }

  /** A sleep under `instantSleeps`: `done` runs at the next turn. */
  private instantTimer(done: () => void): Timer {
    let cancelled = false;
    setImmediate(() => {
      if (!cancelled) done();
    });
    return {
      cancel: () => {
        cancelled = true;
      },
      refresh: () => {},
    };
  }

  private earliest(): Pending | undefined {
    let best: Pending | undefined;
    for (const t of this.pending) {
      if (best === undefined || t.atMs < best.atMs || (t.atMs === best.atMs && t.seq < best.seq)) best = t;
    }
    return best;
  }

  private fire(entry: Pending): void {
    this.pending.delete(entry);
    this.nowMs = Math.max(this.nowMs, entry.atMs);
    entry.fire();
  }
}
