/**
 * A burst of messages into a real gateway process through the web channel's POST endpoint, with
 * a fast fake model, measuring admission latency (POST → 202), checking loss and duplicates in
 * the database, and sampling the gateway's RSS. Shared by test/load/burst.soak.ts and
 * bench/load.ts.
 */
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { MemoryProbe } from "../../bench/support/memory-probe.ts";
import { TERMINAL_RUN_STATES } from "../../src/runtime/types.ts";
import { eventually, type GatewayProcess, startGatewayProcess } from "../e2e/support/gateway-process.ts";
import { metricValue } from "../e2e/support/metrics.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";

export interface BurstOptions {
  messages: number;
  /** Browser sessions the messages are spread over (one conversation each). */
  sessions: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Messages sent a second time with the same clientMessageId. */
  duplicates: number;
  /** The fake model's answer takes this long (a real model's first token takes seconds). */
  modelDelayMs: number;
  /** How long the runs may take to finish after the burst. */
  drainTimeoutMs: number;
  /**
   * Further bursts of `messages` new messages after the first has drained, each drained in turn,
   * to see whether memory settles. Default 0.
   */
  extraRounds?: number;
  /** Bun flags for the gateway process (e.g. `--smol`), before its command. Default none. */
  bunFlags?: readonly string[];
  /** Added to the gateway's environment (e.g. JSC or SQLite settings under test). */
  gatewayEnv?: Record<string, string>;
  /**
   * Preload bench/support/memory-probe.ts and read where the gateway's memory is after each
   * drain (once as found, once after a full GC). Default false.
   */
  memoryProbe?: boolean;
  /**
   * After each drain, wait this long and read RSS again (the gateway collects garbage once idle,
   * src/gateway/idle-collector.ts). Default 0: no second reading.
   */
  settleMs?: number;
}

export interface BurstReport {
  options: BurstOptions;
  burstMs: number;
  admissionMs: { p50: number; p99: number; max: number };
  statuses: Record<string, number>;
  outcomes: Record<string, number>;
  duplicateOutcomes: Record<string, number>;
  runs: number;
  receipts: number;
  distinctReceiptKeys: number;
  runsTerminal: number;
  drainMs: number;
  modelCalls: number;
  rssKb: { before: number; afterBurst: number; afterDrain: number };
  /** RSS after each extra round drained, in kB. */
  rssAfterRoundKb: number[];
  /** With `settleMs`: RSS `settleMs` after each drain (the first round's included), in kB. */
  rssSettledKb: number[];
  /** The gateway's JavaScript heap in use after the first drain and after each extra round, in bytes. */
  heapAfterRoundBytes: number[];
  /** Executor lanes held after the first drain and after each extra round (none once idle). */
  lanesAfterRound: number[];
  /** With `memoryProbe`: the breakdown after the first drain and after each extra round. */
  memoryAfterRound: MemoryProbe[];
  /** The gateway's CPU time (user + system, /proc) over the first burst, and over every round. */
  gatewayCpuMs: { burst: number; total: number };
}

const CLI = join(import.meta.dir, "..", "..", "src", "cli", "main.ts");
const MEMORY_PROBE = join(import.meta.dir, "..", "..", "bench", "support", "memory-probe.ts");

interface WebBody {
  sessionId: string;
  clientMessageId: string;
  text: string;
}

export async function runWebBurst(options: BurstOptions): Promise<BurstReport> {
  const dir = tempDir("switchboard-load-");
  const dbPath = join(dir.path, "gateway.sqlite");
  const llm = startFakeLlmServer({
    rules: [
      { reply: { kind: "text", text: "ok", chunks: 2, chunkDelayMs: options.modelDelayMs, usage: false } },
    ],
  });
  let gateway: GatewayProcess | null = null;
  try {
    const config = join(dir.path, "switchboard.json");
    writeFileSync(
      config,
      JSON.stringify({ version: 1, surfaces: { "web:dm": { inputPolicy: "queue", delivery: "terminal" } } }),
    );
    const probeFile = join(dir.path, "memory-probe.json");
    const bunFlags = [
      ...(options.bunFlags ?? []),
      ...(options.memoryProbe ? ["--preload", MEMORY_PROBE] : []),
    ];
    const gatewayEnv = {
      ...options.gatewayEnv,
      ...(options.memoryProbe ? { SWITCHBOARD_BENCH_MEMORY_PROBE: probeFile } : {}),
    };
    gateway = await startGatewayProcess(
      {
        ...gatewayEnv,
        SWITCHBOARD_DB: dbPath,
        SWITCHBOARD_CONFIG: config,
        SWITCHBOARD_LOG_LEVEL: "info",
        // One client address posting for 500 sessions: lift the web chat's abuse limits.
        SWITCHBOARD_WEB_MESSAGES_PER_MINUTE: "1000000",
        SWITCHBOARD_WEB_REQUESTS_PER_MINUTE: "1000000",
        SWITCHBOARD_MODEL: "openai-compatible:test-model",
        OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
      },
      undefined,
      undefined,
      [process.execPath, ...bunFlags, CLI, "start"],
    );
    const pid = pidOfProcessWithEnv(`SWITCHBOARD_DB=${dbPath}`);
    const url = `${gateway.url}/web/api/messages`;
    const roundBodies = (round: number): WebBody[] =>
      Array.from({ length: options.messages }, (_, i) => ({
        sessionId: `loadsession${String(i % options.sessions).padStart(8, "0")}`,
        clientMessageId: `r${round}msg${String(i).padStart(8, "0")}`,
        text: `load message ${i}`,
      }));
    const bodies = roundBodies(0);
    const rssBefore = rssKb(pid);
    const cpuBefore = cpuMs(pid);

    const post = async (body: WebBody) => {
      const startedMs = performance.now();
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const outcome = response.status === 202 ? ((await response.json()) as { kind: string }).kind : "none";
      if (response.status !== 202) await response.body?.cancel();
      return { status: response.status, outcome, latencyMs: performance.now() - startedMs };
    };

    const burstStartedMs = performance.now();
    const results = await inParallel(bodies, options.concurrency, post);
    const burstMs = performance.now() - burstStartedMs;
    const rssAfterBurst = rssKb(pid);
    const cpuAfterBurst = cpuMs(pid);

    // Replays of earlier messages (a browser retrying a POST): each must be recognised.
    const replays = bodies.filter(
      (_, i) => i % Math.max(1, Math.floor(options.messages / options.duplicates)) === 0,
    );
    const duplicateResults = await inParallel(
      replays.slice(0, options.duplicates),
      options.concurrency,
      post,
    );

    const drainStartedMs = performance.now();
    const terminal = `state IN (${TERMINAL_RUN_STATES.map((s) => `'${s}'`).join(", ")})`;
    const drained = (runs: number) =>
      eventually(
        () => count(dbPath, `SELECT count(*) AS n FROM runs WHERE ${terminal}`) >= runs,
        options.drainTimeoutMs,
        `${runs} runs to finish`,
      ).catch(() => undefined);
    await drained(options.messages);
    const drainMs = performance.now() - drainStartedMs;
    const rssAfterDrain = rssKb(pid);
    // Counted before any extra round adds its own.
    const firstRound = {
      runs: count(dbPath, "SELECT count(*) AS n FROM runs"),
      receipts: count(dbPath, "SELECT count(*) AS n FROM ingress_receipts"),
      distinctReceiptKeys: count(
        dbPath,
        "SELECT count(DISTINCT source || ':' || key) AS n FROM ingress_receipts",
      ),
      runsTerminal: count(dbPath, `SELECT count(*) AS n FROM runs WHERE ${terminal}`),
    };
    const modelCalls = llm.requests().length;

    const rssAfterRoundKb: number[] = [];
    const heapAfterRoundBytes: number[] = [];
    const lanesAfterRound: number[] = [];
    const memoryAfterRound: MemoryProbe[] = [];
    const rssSettledKb: number[] = [];
    const sampleProcess = async () => {
      if (options.settleMs) {
        await Bun.sleep(options.settleMs);
        rssSettledKb.push(rssKb(pid));
      }
      heapAfterRoundBytes.push(await metricValue(gateway!.url, "switchboard_js_heap_used_bytes"));
      lanesAfterRound.push(await metricValue(gateway!.url, "switchboard_runtime_lanes"));
      if (options.memoryProbe) memoryAfterRound.push(await probeMemory(pid, probeFile));
    };
    await sampleProcess();
    for (let round = 1; round <= (options.extraRounds ?? 0); round++) {
      await inParallel(roundBodies(round), options.concurrency, post);
      await drained(options.messages * (round + 1));
      rssAfterRoundKb.push(rssKb(pid));
      await sampleProcess();
    }

    const gatewayCpuMs = { burst: cpuAfterBurst - cpuBefore, total: cpuMs(pid) - cpuBefore };
    const latencies = results.map((r) => r.latencyMs).sort((a, b) => a - b);
    return {
      options,
      burstMs,
      admissionMs: {
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        max: latencies.at(-1) ?? 0,
      },
      statuses: tally(results.map((r) => String(r.status))),
      outcomes: tally(results.map((r) => r.outcome)),
      duplicateOutcomes: tally(duplicateResults.map((r) => r.outcome)),
      ...firstRound,
      drainMs,
      modelCalls,
      rssKb: { before: rssBefore, afterBurst: rssAfterBurst, afterDrain: rssAfterDrain },
      rssAfterRoundKb,
      rssSettledKb,
      heapAfterRoundBytes,
      lanesAfterRound,
      memoryAfterRound,
      gatewayCpuMs,
    };
  } finally {
    await gateway?.kill("SIGTERM");
    await llm.stop();
    dir.cleanup();
  }
}

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
async function inParallel<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function count(dbPath: string, sql: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    db.exec("PRAGMA busy_timeout = 2000");
    return (db.query(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
}

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** The gateway child's pid, found by the unique database path in its environment. */
function pidOfProcessWithEnv(entry: string): number {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "latin1").split("\0").includes(entry)) return Number(name);
    } catch {
      // Gone, or not ours to read.
    }
  }
  throw new Error(`no process with ${entry} in its environment`);
}

/** Asks the preloaded probe of `pid` for its breakdown (SIGUSR2) and reads what it wrote. */
async function probeMemory(pid: number, file: string): Promise<MemoryProbe> {
  rmSync(file, { force: true });
  process.kill(pid, "SIGUSR2");
  await eventually(() => existsSync(file), 10_000, "the gateway's memory probe");
  // Written in one call, but read only once it parses.
  return await eventually(
    () => {
      try {
        return JSON.parse(readFileSync(file, "utf8")) as MemoryProbe;
      } catch {
        return undefined;
      }
    },
    5_000,
    "a complete memory probe",
  );
}

/** VmRSS of `pid` in kB, from /proc/<pid>/status. */
export function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!match?.[1]) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]);
}

/** User + system CPU time of `pid` in ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The report as the lines bench/load.ts prints and docs/benchmarks.md records. */
export function formatReport(report: BurstReport): string {
  const { options, admissionMs, rssKb: rss } = report;
  const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;
  return [
    `web burst: ${options.messages} messages over ${options.sessions} sessions, ${options.concurrency} in flight, ${options.duplicates} replays`,
    `  burst admitted in                 ${Math.round(report.burstMs)} ms (${Math.round((options.messages / report.burstMs) * 1000)} /s)`,
    `  admission latency (POST → 202)    p50 ${admissionMs.p50.toFixed(1)} ms   p99 ${admissionMs.p99.toFixed(1)} ms   max ${admissionMs.max.toFixed(1)} ms`,
    `  statuses / outcomes               ${JSON.stringify(report.statuses)} ${JSON.stringify(report.outcomes)}`,
    `  replays answered                  ${JSON.stringify(report.duplicateOutcomes)}`,
    `  runs / ingress receipts           ${report.runs} / ${report.receipts} (distinct keys ${report.distinctReceiptKeys})`,
    `  runs finished / model calls       ${report.runsTerminal} / ${report.modelCalls} in ${Math.round(report.drainMs)} ms after the burst`,
    `  gateway RSS before / burst / drained  ${mb(rss.before)} / ${mb(rss.afterBurst)} / ${mb(rss.afterDrain)}`,
    ...(report.rssAfterRoundKb.length === 0
      ? []
      : [
          `  RSS after each further round      ${report.rssAfterRoundKb.map(mb).join(" / ")} (${options.messages} new messages each)`,
        ]),
    ...(report.rssSettledKb.length === 0
      ? []
      : [`  RSS ${options.settleMs} ms after each drain  ${report.rssSettledKb.map(mb).join(" / ")}`]),
    `  gateway CPU, burst / all rounds   ${Math.round(report.gatewayCpuMs.burst)} ms / ${Math.round(report.gatewayCpuMs.total)} ms`,
    `  JS heap in use after each drain    ${report.heapAfterRoundBytes.map((b) => mb(b / 1024)).join(" / ")}`,
    `  executor lanes after each drain    ${report.lanesAfterRound.join(" / ")}`,
    ...report.memoryAfterRound.flatMap((probe, round) => formatProbe(probe, round)),
  ].join("\n");
}

function formatProbe(probe: MemoryProbe, round: number): string[] {
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const line = (what: string, s: MemoryProbe["found"]) =>
    `    ${what.padEnd(14)} RSS ${mb(s.rss)} (anonymous ${mb(s.anonymous)}, file-backed ${mb(s.fileBacked)}); ` +
    `JS heap ${mb(s.jsHeapSize)} of ${mb(s.jsHeapCapacity)} held, extra ${mb(s.jsExtraMemory)}, ` +
    `ArrayBuffers ${mb(s.arrayBuffers)}; ${s.objectCount} objects; ` +
    `malloc in use ${mb(s.mallocInUse)} of ${mb(s.mallocCommitted)} committed, arena resident ${mb(s.arenaResident)}`;
  return [
    `  memory after drain ${round + 1} (MB; a full collection took ${probe.fullGcMs.toFixed(0)} ms)`,
    line("as found", probe.found),
    line("after full GC", probe.afterFullGc),
    `    most objects   ${probe.afterFullGc.topObjectTypes.map(([type, n]) => `${type} ${n}`).join(", ")}`,
  ];
}
