/**
 * A full garbage collection once the gateway goes quiet after work, when memory grew. JavaScriptCore
 * sizes its heap from the machine's RAM, so after a burst it leaves hundreds of MB of garbage (and
 * the native buffers that garbage holds) until allocation pressure returns: 2,000 web messages left
 * a 275 MB heap with 29 MB alive (docs/benchmarks.md, Load). Collecting when no conversation has
 * work costs no reply any latency, and Bun's full collection also hands the freed pages back to the
 * OS. But a full collection costs 20–50 ms of CPU, and a paced chat is quiet between its replies:
 * collecting every 10 s there cost about 5 ms of CPU a reply while JavaScriptCore's own collections
 * kept the heap near 25 MB (docs/benchmarks/journal/reply-latency.md). So a collection also waits
 * until the heap or the resident set has grown by some MB since its lowest since the last one.
 */
import type { Clock, Timer } from "../util/clock.ts";

/** What the collector reads of the process's memory, in bytes (`process.memoryUsage()`, about 8 µs). */
export interface MemoryReading {
  heapUsed: number;
  rss: number;
}

export interface IdleCollectorOptions {
  clock: Clock;
  /** Whether any conversation has work in this process now (the runtime's lanes). */
  busy: () => boolean;
  /** One full collection (`Bun.gc(true)`). */
  collect: () => void;
  /** The process's memory now. Default `process.memoryUsage()`. */
  memory?: () => MemoryReading;
  /** How often to look, in milliseconds. Default 1000. */
  checkIntervalMs?: number;
  /** Least time between two collections, in milliseconds. Default 10,000. */
  minIntervalMs?: number;
  /** Growth of the JS heap in use that warrants a collection, in bytes. Default 32 MiB. */
  heapGrowthBytes?: number;
  /** Growth of the resident set that warrants a collection, in bytes. Default 64 MiB. */
  rssGrowthBytes?: number;
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
  /** The lowest reading since the last collection (or the start), the floor growth is measured from. */
  floor: MemoryReading;
}

export interface GrowthThresholds {
  heapGrowthBytes: number;
  rssGrowthBytes: number;
}

/**
 * Whether to collect now: only after work, only when quiet, not more often than `minIntervalMs`,
 * and only when the heap or the resident set grew past its threshold above `state.floor`.
 */
export function shouldCollect(
  state: IdleState,
  busy: boolean,
  nowMs: number,
  minIntervalMs: number,
  memory: MemoryReading,
  thresholds: GrowthThresholds,
): boolean {
  if (!state.workSeen || busy || nowMs - state.lastCollectedMs < minIntervalMs) return false;
  return (
    memory.heapUsed - state.floor.heapUsed >= thresholds.heapGrowthBytes ||
    memory.rss - state.floor.rss >= thresholds.rssGrowthBytes
  );
}

const MiB = 1024 * 1024;

function processMemory(): MemoryReading {
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss };
}

export function startIdleCollector(options: IdleCollectorOptions): IdleCollector {
  const { clock, busy, collect } = options;
  const memory = options.memory ?? processMemory;
  const minIntervalMs = options.minIntervalMs ?? 10_000;
  const thresholds: GrowthThresholds = {
    heapGrowthBytes: options.heapGrowthBytes ?? 32 * MiB,
    rssGrowthBytes: options.rssGrowthBytes ?? 64 * MiB,
  };
  const state: IdleState = {
    workSeen: false,
    lastCollectedMs: Number.NEGATIVE_INFINITY,
    floor: memory(),
  };
  const timer: Timer = clock.every(
    options.checkIntervalMs ?? 1000,
    function checkIdle() {
      const isBusy = busy();
      if (isBusy) state.workSeen = true;
      // Nothing ran since the last look that could have grown memory: no reading needed.
      if (!state.workSeen || isBusy) return;
      const now = memory();
      state.floor = {
        heapUsed: Math.min(state.floor.heapUsed, now.heapUsed),
        rss: Math.min(state.floor.rss, now.rss),
      };
      if (!shouldCollect(state, isBusy, clock.now(), minIntervalMs, now, thresholds)) return;
      state.workSeen = false;
      state.lastCollectedMs = clock.now();
      collect();
      state.floor = memory();
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
