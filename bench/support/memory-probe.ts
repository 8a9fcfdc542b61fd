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
  /**
   * mimalloc, which serves every native allocation in the process (JSC's heap, SQLite's page
   * cache, Bun's HTTP buffers): bytes in live blocks, and bytes it holds from the OS (committed),
   * so `committed - inUse` is freed memory the allocator has not given back yet.
   */
  mallocInUse: number;
  mallocCommitted: number;
  /** The largest anonymous mapping's resident bytes (mimalloc's arena), and the JIT's code. */
  arenaResident: number;
  objectCount: number;
  /** The most numerous object types, for a look at what stays alive. */
  topObjectTypes: Array<[string, number]>;
}

export interface MemoryProbe {
  found: MemorySample;
  afterFullGc: MemorySample;
  /** How long the full collection took (what the gateway's idle collection costs). */
  fullGcMs: number;
}

const file = process.env.SWITCHBOARD_BENCH_MEMORY_PROBE;
let probes = 0;
if (file) {
  process.on("SIGUSR2", () => {
    const found = sample();
    const startedMs = performance.now();
    Bun.gc(true);
    const fullGcMs = performance.now() - startedMs;
    const probe: MemoryProbe = { found, afterFullGc: sample(), fullGcMs };
    // A V8-format heap snapshot (Chrome DevTools opens it) after each probe, to see what stays alive.
    const snapshots = process.env.SWITCHBOARD_BENCH_HEAP_SNAPSHOTS;
    if (snapshots)
      writeFileSync(`${snapshots}/probe-${++probes}.heapsnapshot`, Bun.generateHeapSnapshot("v8"));
    writeFileSync(file, JSON.stringify(probe));
  });
}

function sample(): MemorySample {
  const rollup = readFileSync("/proc/self/smaps_rollup", "utf8");
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(rollup)?.[1] ?? 0) * 1024;
  const heap = heapStats();
  const mimalloc = (heap as unknown as { mimalloc: MimallocStats }).mimalloc;
  const memory = process.memoryUsage();
  return {
    rss: kb("Rss"),
    anonymous: kb("Anonymous"),
    fileBacked: kb("Rss") - kb("Anonymous"),
    jsHeapSize: heap.heapSize,
    jsHeapCapacity: heap.heapCapacity,
    jsExtraMemory: heap.extraMemorySize,
    arrayBuffers: memory.arrayBuffers,
    mallocInUse: mimalloc.malloc_normal.current + mimalloc.malloc_huge.current,
    mallocCommitted: mimalloc.committed.current,
    arenaResident: largestAnonymousResident(),
    objectCount: heap.objectCount,
    topObjectTypes: Object.entries(heap.objectTypeCounts)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8),
  };
}

/** The part of `heapStats().mimalloc` read here (Bun 1.4: mimalloc's `mi_stats_get_json`). */
interface MimallocStats {
  malloc_normal: { current: number };
  malloc_huge: { current: number };
  committed: { current: number };
}

/** Resident bytes of the largest resident anonymous mapping, from /proc/self/smaps. */
function largestAnonymousResident(): number {
  let largest = 0;
  let anonymous = false;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) anonymous = line.trim().split(/\s+/).length === 5;
    else if (anonymous && line.startsWith("Rss:"))
      largest = Math.max(largest, Number(line.split(/\s+/)[1]) * 1024);
  }
  return largest;
}
