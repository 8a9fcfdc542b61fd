/**
 * Reply latency, switchboard against a minimal grammY + AI SDK bot (bench/support/baseline-bot.ts,
 * no database), in one run. Each bot is its own process facing the product's Telegram emulator
 * (Telegram's flood limits on, sub-millisecond stamps) and the fake LLM server, which answers at
 * once. Users are paced: each chat sends its next message `--pause-ms` after its previous reply
 * appeared. Latency is from the emulator queueing the update to the emulator receiving the reply.
 * Switchboard's DMs deliver as one terminal message here, like the baseline's ctx.reply.
 *   npx bun bench/reply-latency.ts [--messages 60] [--chats 20] [--per-chat 10] [--pause-ms 1000]
 *     [--warm-up 10] [--history 0] [--cpu-prof DIR] [--product-only] [--save-prompt FILE] [--ladder] [--sql-trace]
 *     [--telemetry [--rounds 1]] [--gateway-env KEY=VALUE]... [--smol]
 * `--smol` runs switchboard with Bun's `--smol` (as in bench/load.ts).
 * `--gateway-env KEY=VALUE` (repeatable, as in bench/load.ts) passes more environment to switchboard's process, e.g.
 * `--gateway-env SWITCHBOARD_IDLE_GC=off`.
 * `--warm-up N` sends N paced messages in each of `--chats` chats before anything is measured.
 * `--history N` first fills switchboard's database with N earlier replies in 200 other chats
 * (bench/support/history.ts), delivered, as a gateway that has been up for months has it.
 * `--cpu-prof DIR` runs the gateway under bun's sampling profiler (a .cpuprofile and a markdown
 * summary in DIR at its exit); `--product-only` skips the baseline (for profiling runs);
 * `--save-prompt FILE` writes the request body of a one-line message to FILE (for
 * `bench/model-call.ts --prompt FILE`); `--ladder` also runs the baseline bot's two rungs towards
 * switchboard's promises (streamText; then streamText and a durable SQLite file, see
 * baseline-bot.ts), so each promise's own cost shows beside switchboard's; `--sql-trace` counts
 * and times the gateway's SQL statements (bench/support/sql-trace.ts) and prints them per reply;
 * `--telemetry` also runs switchboard with OpenTelemetry on (OTLP/protobuf to a local collector
 * process, bench/support/otlp-sink.ts; metrics every 5 s), each run on its own database, and
 * prints off against on; `--rounds N` alternates N runs of each (off, on, off, on…); with
 * `--cpu-prof DIR` each of those runs writes its profile to DIR/<on|off>-<round>.
 * Prints end-to-end p50/p90/p99 for both bots and both workloads (one chat, `--chats` chats), the
 * overhead (switchboard minus baseline) at p50 and p99, switchboard's per-stage medians from its
 * own /metrics histograms (interpolated within buckets), each bot's CPU time per reply (Linux), and
 * the prompt it sends for a one-line message.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { REPLY_STAGES } from "../src/gateway/metrics.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";
import { fillHistory } from "./support/history.ts";
import { quantile, stageMedian } from "./support/latency-stats.ts";
import { startOtlpSink } from "./support/otlp-sink.ts";
import type { TracedStatement } from "./support/sql-trace.ts";
import { type Bot, chatTurns, cpuMs, startBaseline, startProduct } from "./support/telegram-bots.ts";
import { argInt } from "./util.ts";

const messages = argInt("--messages", 60);
const chats = argInt("--chats", 20);
const perChat = argInt("--per-chat", 10);
const pauseMs = argInt("--pause-ms", 1000);
const warmUp = Math.max(1, argInt("--warm-up", 10));
const history = argInt("--history", 0);
const cpuProfDir = process.argv.includes("--cpu-prof")
  ? process.argv[process.argv.indexOf("--cpu-prof") + 1]
  : undefined;
const productOnly = process.argv.includes("--product-only");
const ladder = process.argv.includes("--ladder") && !productOnly;
const savePromptFile = process.argv.includes("--save-prompt")
  ? process.argv[process.argv.indexOf("--save-prompt") + 1]
  : undefined;
const sqlTrace = process.argv.includes("--sql-trace");
const telemetry = process.argv.includes("--telemetry");
const rounds = argInt("--rounds", 1);
const extraEnv: Record<string, string> = {};
for (const [i, arg] of process.argv.entries()) {
  if (arg !== "--gateway-env") continue;
  const pair = process.argv[i + 1] ?? "";
  const eq = pair.indexOf("=");
  if (eq <= 0) throw new Error(`--gateway-env takes KEY=VALUE, got "${pair}"`);
  extraEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
}
const STAGES = REPLY_STAGES;
const FIRST_USER_ID = 910_001;
const userIds = Array.from({ length: chats }, (_, i) => FIRST_USER_ID + i);

const dir = tempDir("switchboard-bench-latency-");
const llm = startFakeLlmServer();

/** Each reply's latency in ms, or null for a reply lost to a 429. */
async function workload(bot: Bot, chatCount: number, count: number): Promise<(number | null)[]> {
  const all = await Promise.all(
    userIds.slice(0, chatCount).map((id) => chatTurns(bot, id, { count, pauseMs })),
  );
  return all.flat().map((turn) => (turn.repliedAtMs === null ? null : turn.repliedAtMs - turn.sentAtMs));
}

const fmt = (ms: number | null) => (ms === null ? "    –" : `${ms.toFixed(1).padStart(5)} ms`);

interface Run {
  oneChat: (number | null)[];
  manyChats: (number | null)[];
  /** The bot process's CPU time per reply, in ms (null where /proc is not there). */
  cpuPerReply?: { oneChat: number | null; manyChats: number | null };
  stages?: { oneChat: (number | null)[]; manyChats: (number | null)[] };
}

async function measure(bot: Bot): Promise<Run> {
  // A warm-up in every chat, paced like the workloads: first connections, prepared statements,
  // and enough calls for the JIT to compile the reply's path, in both bots, as in a process that
  // has been up for a while. Without it the first workload's figures fall over its first 20 or so
  // replies (from about 4 ms to 2 ms for the baseline) and measure start-up rather than a reply.
  await workload(bot, chats, warmUp);
  const s0 = await bot.metrics?.();
  const c0 = cpuMs(bot.pid);
  const oneChat = await workload(bot, 1, messages);
  const c1 = cpuMs(bot.pid);
  const s1 = await bot.metrics?.();
  const manyChats = await workload(bot, chats, perChat);
  const c2 = cpuMs(bot.pid);
  const s2 = await bot.metrics?.();
  const perReply = (from: number | null, to: number | null, n: number) =>
    from === null || to === null ? null : (to - from) / n;
  const stats = bot.emulator.rateLimitStats();
  if (stats && stats.rejected > 0) console.error(`  note: ${stats.rejected} sends were answered 429`);
  return {
    oneChat,
    manyChats,
    cpuPerReply: { oneChat: perReply(c0, c1, messages), manyChats: perReply(c1, c2, chats * perChat) },
    ...(s0 !== undefined && s1 !== undefined && s2 !== undefined
      ? {
          stages: {
            oneChat: STAGES.map((stage) => stageMedian(s0, s1, stage)),
            manyChats: STAGES.map((stage) => stageMedian(s1, s2, stage)),
          },
        }
      : {}),
  };
}

console.error(
  `switchboard: ${messages} paced messages in one chat, then ${perChat} in each of ${chats} chats`,
);
if (history > 0) {
  const startedAt = performance.now();
  await fillHistory(`${dir.path}/gateway.sqlite`, {
    replies: history,
    conversations: 200,
    channel: "telegram",
  });
  console.error(
    `  ${history} earlier replies written in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`,
  );
}
const sqlTraceFile = sqlTrace ? `${dir.path}/sql-trace.json` : undefined;
const bunFlags = process.argv.includes("--smol") ? ["--smol"] : [];
const product = await startProduct({
  dir: dir.path,
  llm,
  userIds,
  cpuProfDir,
  sqlTraceFile,
  env: extraEnv,
  bunFlags,
});
llm.reset();
const productRun = await measure(product).catch(async (error: unknown) => {
  console.error(`switchboard's last log lines:\n${product.logs?.slice(-40).join("\n")}`);
  await product.stop();
  throw error;
});
const oneLine = llm.requests().find((request) => request.lastUserText.startsWith("ping "));
await product.stop();
const statements: TracedStatement[] = sqlTraceFile ? JSON.parse(readFileSync(sqlTraceFile, "utf8")) : [];

/** `--telemetry`: switchboard with OpenTelemetry on, alternating with more runs with it off. */
let telemetryRuns: { off: Run[]; on: Run[]; exported: { requests: number; bytes: number } } | null = null;
if (telemetry) {
  telemetryRuns = { off: [productRun], on: [], exported: { requests: 0, bytes: 0 } };
  // off, on, off, on…: the machine's load drifts, so each setting gets turns across the run.
  for (let round = 0; round < rounds; round += 1) {
    for (const on of round === 0 ? [true] : [false, true]) {
      console.error(
        `switchboard with OpenTelemetry ${on ? "on (OTLP/protobuf to a local collector)" : "off"}: the same workloads`,
      );
      const sink = on ? await startOtlpSink() : null;
      const bot = await startProduct({
        dir: dir.path,
        llm,
        userIds,
        dbFile: `gateway-${round}-${on ? "on" : "off"}.sqlite`,
        ...(cpuProfDir === undefined ? {} : { cpuProfDir: `${cpuProfDir}/${on ? "on" : "off"}-${round}` }),
        env: {
          ...extraEnv,
          ...(sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_METRIC_EXPORT_INTERVAL: "5000" } : {}),
        },
        bunFlags,
      });
      const run = await measure(bot);
      await bot.stop();
      telemetryRuns[on ? "on" : "off"].push(run);
      if (sink) {
        const exported = await sink.stop();
        telemetryRuns.exported.requests += exported.requests;
        telemetryRuns.exported.bytes += exported.bytes;
      }
    }
  }
}

let baselineRun: Run = { oneChat: [], manyChats: [] };
if (!productOnly) {
  console.error("baseline (grammY + AI SDK, no database): the same workloads");
  const baseline = await startBaseline(llm, userIds);
  baselineRun = await measure(baseline);
  await baseline.stop();
}
const rungs: Array<[string, Run]> = [];
if (ladder) {
  for (const [label, variant] of [
    ["baseline + streamText", { stream: true }],
    ["… + SQLite (durable)", { stream: true, dbFile: `${dir.path}/baseline.sqlite` }],
  ] as const) {
    console.error(`${label}: the same workloads`);
    const rung = await startBaseline(llm, userIds, variant);
    rungs.push([label, await measure(rung)]);
    await rung.stop();
  }
}
await llm.stop();
dir.cleanup();

console.log(
  `\nreply latency, paced (${pauseMs} ms after each reply), instant model, Telegram emulator, after a warm-up of ${warmUp} in each of ${chats} chats${history > 0 ? `, switchboard's database holding ${history} earlier replies` : ""}`,
);
for (const [label, key, n] of [
  ["one chat", "oneChat", messages],
  [`${chats} chats`, "manyChats", chats * perChat],
] as const) {
  const p = (run: Run, q: number) => quantile(run[key], q);
  const lost = (run: Run) => run[key].filter((v) => v === null).length;
  console.log(
    `\n  ${label} (${n} replies; lost to 429s: switchboard ${lost(productRun)}, baseline ${lost(baselineRun)})`,
  );
  console.log("                           p50       p90       p99");
  console.log(
    `    switchboard          ${fmt(p(productRun, 0.5))}  ${fmt(p(productRun, 0.9))}  ${fmt(p(productRun, 0.99))}`,
  );
  console.log(
    `    baseline             ${fmt(p(baselineRun, 0.5))}  ${fmt(p(baselineRun, 0.9))}  ${fmt(p(baselineRun, 0.99))}`,
  );
  console.log(
    `    overhead             ${fmt(p(productRun, 0.5) - p(baselineRun, 0.5))}            ${fmt(p(productRun, 0.99) - p(baselineRun, 0.99))}   (target ≤ 3 ms p50, ≤ 10 ms p99)`,
  );
  if (key === "manyChats") {
    // Every chat's first message goes out at the same moment, so the first round is one burst
    // that a single event loop answers one after another; the later rounds are spread out by then.
    const round = (run: Run, first: boolean) => {
      const values = run[key].filter((_, i) => (i % perChat === 0) === first);
      return [0.5, 0.9, 1].map((x) => fmt(quantile(values, x))).join(" / ");
    };
    for (const [title, first] of [
      [`first round (${chats} at once)`, true],
      ["later rounds", false],
    ] as const)
      console.log(
        `    ${title.padEnd(24)} p50 / p90 / max: switchboard ${round(productRun, first)}, baseline ${round(baselineRun, first)}`,
      );
  }
  const cpu = (run: Run) => run.cpuPerReply?.[key] ?? null;
  const productCpu = cpu(productRun);
  const baselineCpu = cpu(baselineRun);
  if (productCpu !== null) {
    console.log(
      `    CPU per reply: switchboard ${productCpu.toFixed(2)} ms, baseline ${baselineCpu === null ? "–" : `${baselineCpu.toFixed(2)} ms`}${baselineCpu ? ` (${(productCpu / baselineCpu).toFixed(1)}×)` : ""}`,
    );
  }
  const stages = productRun.stages?.[key];
  if (stages) {
    console.log("    switchboard stage medians (from /metrics):");
    for (const [i, stage] of STAGES.entries())
      console.log(`      ${stage.padEnd(12)} ${fmt(stages[i] ?? null)}`);
    const sum = stages.reduce<number>((total, ms) => total + (ms ?? 0), 0);
    console.log(`      sum          ${fmt(sum)}   (end to end p50 ${fmt(p(productRun, 0.5))})`);
  }
}
if (oneLine && savePromptFile !== undefined) writeFileSync(savePromptFile, JSON.stringify(oneLine.body));
if (oneLine) {
  const body = JSON.stringify(oneLine.body);
  const tools = JSON.stringify(oneLine.body.tools ?? []);
  console.log(
    `\n  prompt for a one-line message: ${body.length} bytes of request body, ≈${Math.ceil(body.length / 4)} tokens (chars/4), of which tools ${tools.length} bytes (${oneLine.toolNames.length} tools), messages ${oneLine.messages.length}`,
  );
}
if (rungs.length > 0) {
  const rows: Array<[string, Run]> = [["baseline", baselineRun], ...rungs, ["switchboard", productRun]];
  console.log("\n  the ladder: p50 / p90 / p99, CPU per reply");
  for (const [title, key] of [
    ["one chat", "oneChat"],
    [`${chats} chats`, "manyChats"],
  ] as const) {
    console.log(`    ${title}`);
    for (const [label, run] of rows) {
      const q = (x: number) => quantile(run[key], x).toFixed(1);
      const cpu = run.cpuPerReply?.[key];
      console.log(
        `      ${label.padEnd(24)} ${q(0.5).padStart(6)} / ${q(0.9).padStart(6)} / ${q(0.99).padStart(6)} ms   ${cpu == null ? "–" : `${cpu.toFixed(2)} ms`}`,
      );
    }
  }
}

if (telemetryRuns) {
  const { exported } = telemetryRuns;
  console.log(
    `\n  OpenTelemetry off / on, ${rounds} run${rounds > 1 ? "s" : ""} each, alternating (p50 / p90 / p99 over all their replies, CPU per reply)`,
  );
  for (const [title, key] of [
    ["one chat", "oneChat"],
    [`${chats} chats`, "manyChats"],
  ] as const) {
    for (const label of ["off", "on"] as const) {
      const runs = telemetryRuns[label];
      const replies = runs.flatMap((run) => run[key]);
      const q = (x: number) => quantile(replies, x).toFixed(1);
      const cpus = runs
        .map((run) => run.cpuPerReply?.[key])
        .filter((ms): ms is number => typeof ms === "number");
      const cpu = cpus.length > 0 ? cpus.reduce((a, b) => a + b, 0) / cpus.length : null;
      console.log(
        `    ${title.padEnd(10)} ${label.padEnd(4)} ${q(0.5).padStart(6)} / ${q(0.9).padStart(6)} / ${q(0.99).padStart(6)} ms   ${cpu === null ? "–" : `${cpu.toFixed(2)} ms`}`,
      );
    }
  }
  const replies = rounds * (chats * warmUp + messages + chats * perChat);
  console.log(
    `    exported: ${exported.requests} OTLP requests, ${(exported.bytes / replies / 1024).toFixed(1)} KB per reply`,
  );
}

if (sqlTrace) {
  // Warm-up, one chat, many chats; start-up statements (migrations) are counted too.
  const replies = chats * warmUp + messages + chats * perChat;
  const count = statements.reduce((n, s) => n + s.count, 0);
  const ms = statements.reduce((n, s) => n + s.ms, 0);
  console.log(
    `\n  SQL: ${(count / replies).toFixed(1)} statements and ${(ms / replies).toFixed(2)} ms of statement time per reply (${replies} replies)`,
  );
  console.log("    per reply: count × mean = total, the 25 statements with the most time");
  for (const s of statements.sort((a, b) => b.ms - a.ms).slice(0, 25))
    console.log(
      `    ${(s.count / replies).toFixed(2).padStart(6)} × ${(s.ms / s.count).toFixed(3)} = ${(s.ms / replies).toFixed(3)} ms  ${s.sql.slice(0, 110)}`,
    );
}
