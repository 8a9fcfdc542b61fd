/**
 * Preloaded into a gateway process by the load benchmark (`bun --preload`): on SIGUSR2 it writes
 * where the process's memory is to the file named by SWITCHBOARD_BENCH_MEMORY_PROBE, once as found
 * and once after a full garbage collection, so a report can tell live data from garbage not yet
 * collected and JavaScript from native memory. Never loaded by the gateway itself.
 */
import { heapStats } from "bun:jsc";
import { readFileSync, writeFileSync } from "node:fs";

/** One look at the process's memory, in bytes. */
export interface MemorySample {
  /** Resident set, and its anonymous part (heaps, caches) and file-backed part (code, mapped files). */
  rss: number;
  anonymous: number;
  fileBacked: number;
  /** The JavaScript heap: live object bytes, and what JSC holds for it (capacity). */
  jsHeapSize: number;
  jsHeapCapacity: number;
  /** Native memory JSC knows objects hold (buffers, strings outside the heap). */
  jsExtraMemory: number;
  /** ArrayBuffers (and Buffers) alone. */
  arrayBuffers: number;
  objectCount: number;
  /** The most numerous object types, for a look at what stays alive. */
  topObjectTypes: Array<[string, number]>;
}

export interface MemoryProbe {
  found: MemorySample;
  afterFullGc: MemorySample;
}

const file = process.env.SWITCHBOARD_BENCH_MEMORY_PROBE;
if (file) {
  process.on("SIGUSR2", () => {
    const found = sample();
    Bun.gc(true);
    const probe: MemoryProbe = { found, afterFullGc: sample() };
    writeFileSync(file, JSON.stringify(probe));
  });
}

function sample(): MemorySample {
  const rollup = readFileSync("/proc/self/smaps_rollup", "utf8");
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(rollup)?.[1] ?? 0) * 1024;
  const heap = heapStats();
  const memory = process.memoryUsage();
  return {
    rss: kb("Rss"),
    anonymous: kb("Anonymous"),
    fileBacked: kb("Rss") - kb("Anonymous"),
    jsHeapSize: heap.heapSize,
    jsHeapCapacity: heap.heapCapacity,
    jsExtraMemory: heap.extraMemorySize,
    arrayBuffers: memory.arrayBuffers,
    objectCount: heap.objectCount,
    topObjectTypes: Object.entries(heap.objectTypeCounts)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8),
  };
}
