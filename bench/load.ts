/**
 * Load: a burst of messages through the web channel of a real gateway process (fast fake model),
 * reporting admission latency, loss/duplicates and the gateway's RSS and CPU time. See docs/benchmarks.md.
 *
 *   npx bun bench/load.ts --messages 2000 --sessions 500 --concurrency 64 --duplicates 200 --model-delay-ms 3000
 *
 * `--extra-rounds N` sends N more bursts, each drained, to see where memory settles;
 * `--memory-probe` breaks the gateway's memory down after each drain (bench/support/memory-probe.ts);
 * `--smol` runs the gateway with Bun's `--smol`; `--gateway-env NAME=value` (repeatable) adds to its
 * environment; `--settle-ms N` (default 3000) reads RSS again N ms after each drain, once the
 * gateway's idle collection has run.
 */
import { formatReport, runWebBurst } from "../test/load/web-burst.ts";
import { argInt } from "./util.ts";

/** Every value given for a repeatable flag. */
function argValues(flag: string): string[] {
  return process.argv.flatMap((arg, i) =>
    arg === flag && process.argv[i + 1] ? [process.argv[i + 1]!] : [],
  );
}

const report = await runWebBurst({
  messages: argInt("--messages", 2000),
  sessions: argInt("--sessions", 500),
  concurrency: argInt("--concurrency", 64),
  duplicates: argInt("--duplicates", 200),
  modelDelayMs: argInt("--model-delay-ms", 3000),
  drainTimeoutMs: argInt("--drain-timeout-ms", 120_000),
  extraRounds: argInt("--extra-rounds", 0),
  bunFlags: process.argv.includes("--smol") ? ["--smol"] : [],
  gatewayEnv: Object.fromEntries(
    argValues("--gateway-env").map((pair) => {
      const at = pair.indexOf("=");
      if (at <= 0) throw new Error(`--gateway-env takes NAME=value, not '${pair}'`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  ),
  memoryProbe: process.argv.includes("--memory-probe"),
  settleMs: argInt("--settle-ms", 3000),
});
console.log(formatReport(report));
const lost = report.options.messages - report.receipts;
if (lost !== 0 || report.runs !== report.options.messages) {
  console.error(`LOSS OR DUPLICATION: ${report.receipts} receipts, ${report.runs} runs`);
  process.exit(1);
}
