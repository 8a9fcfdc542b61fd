import type { Timer, TimerHandle } from "../../../schedules/timer.ts";
import type { Clock } from "../../../src/util/clock.ts";

interface PendingTimer {
  atMs: number;
  seq: number;
  callback: () => void;
}

/** A clock and timer whose time moves only when a test calls advance()/advanceTo(). */
export class FakeTime implements Clock, Timer {
  private nowMs: number;
  private seq = 0;
  private readonly pending = new Map<number, PendingTimer>();

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const handle = this.set(ms, () => resolve());
      signal?.addEventListener("abort", () => {
        this.clear(handle);
        reject(signal.reason);
      });
    });
  }

  set(delayMs: number, callback: () => void): TimerHandle {
    const seq = ++this.seq;
    this.pending.set(seq, { atMs: this.nowMs + Math.max(0, delayMs), seq, callback });
    return { id: seq };
  }

  clear(handle: TimerHandle): void {
    this.pending.delete(handle.id as number);
  }

  /** Due times of the timers still pending, earliest first. */
  pendingAt(): number[] {
    return [...this.pending.values()].map((t) => t.atMs).sort((a, b) => a - b);
  }

  /** Moves time forward by `ms`, firing every timer due on the way in order and letting the async work they start run. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.nowMs + ms);
  }

  async advanceTo(targetMs: number): Promise<void> {
    await flush();
    for (;;) {
      const next = [...this.pending.values()]
        .filter((t) => t.atMs <= targetMs)
        .sort((a, b) => a.atMs - b.atMs || a.seq - b.seq)[0];
      if (!next) break;
      this.pending.delete(next.seq);
      this.nowMs = Math.max(this.nowMs, next.atMs);
      next.callback();
      await flush();
    }
    this.nowMs = Math.max(this.nowMs, targetMs);
  }
}

/** Lets promise chains started by timers (SQLite calls are synchronous) run to completion. */
export async function flush(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
