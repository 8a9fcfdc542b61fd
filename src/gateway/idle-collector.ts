/**
 * A full garbage collection once the gateway goes quiet after work. JavaScriptCore sizes its heap
 * from the machine's RAM, so after a burst it leaves hundreds of MB of garbage (and the native
 * buffers that garbage holds) until allocation pressure returns: 2,000 web messages left a 275 MB
 * heap with 29 MB alive (docs/benchmarks.md, Load). Collecting when no conversation has work
 * costs no reply any latency, and Bun's full collection also hands the freed pages back to the OS.
 */
import type { Clock, Timer } from "../util/clock.ts";

export interface IdleCollectorOptions {
  clock: Clock;
  /** Whether any conversation has work in this process now (the runtime's lanes). */
  busy: () => boolean;
  /** One full collection (`Bun.gc(true)`). */
  collect: () => void;
  /** How often to look, in milliseconds. Default 1000. */
  checkIntervalMs?: number;
  /** Least time between two collections, in milliseconds. Default 10,000. */
  minIntervalMs?: number;
}

export interface IdleCollector {
  /** Work finished (a run ended): the next quiet moment may collect. */
  noteWork(): void;
  stop(): void;
}

export interface IdleState {
  /** Work was seen since the last collection. */
  workSeen: boolean;
  /** When the last collection ran, ms since epoch; -Infinity before the first. */
  lastCollectedMs: number;
}

/** Whether to collect now: only after work, only when quiet, and not more often than `minIntervalMs`. */
export function shouldCollect(
  state: IdleState,
  busy: boolean,
  nowMs: number,
  minIntervalMs: number,
): boolean {
  return state.workSeen && !busy && nowMs - state.lastCollectedMs >= minIntervalMs;
}

export function startIdleCollector(options: IdleCollectorOptions): IdleCollector {
  const { clock, busy, collect } = options;
  const minIntervalMs = options.minIntervalMs ?? 10_000;
  const state: IdleState = { workSeen: false, lastCollectedMs: Number.NEGATIVE_INFINITY };
  const timer: Timer = clock.every(
    options.checkIntervalMs ?? 1000,
    function checkIdle() {
      const isBusy = busy();
      if (isBusy) state.workSeen = true;
      if (!shouldCollect(state, isBusy, clock.now(), minIntervalMs)) return;
      state.workSeen = false;
      state.lastCollectedMs = clock.now();
      collect();
    },
    { unref: true },
  );
  return {
    noteWork: () => {
      state.workSeen = true;
    },
    stop: () => timer.cancel(),
  };
}
