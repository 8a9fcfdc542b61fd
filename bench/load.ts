/**
 * Load: a burst of messages through the web channel of a real gateway process (fast fake model),
 * reporting admission latency, loss/duplicates and the gateway's RSS. See docs/benchmarks.md.
 *
 *   npx bun bench/load.ts --messages 2000 --sessions 500 --concurrency 64 --duplicates 200 --model-delay-ms 3000
 */
import { formatReport, runWebBurst } from "../test/load/web-burst.ts";
import { argInt } from "./util.ts";

const report = await runWebBurst({
  messages: argInt("--messages", 2000),
  sessions: argInt("--sessions", 500),
  concurrency: argInt("--concurrency", 64),
  duplicates: argInt("--duplicates", 200),
  modelDelayMs: argInt("--model-delay-ms", 3000),
  drainTimeoutMs: argInt("--drain-timeout-ms", 120_000),
  extraRounds: argInt("--extra-rounds", 0),
});
console.log(formatReport(report));
const lost = report.options.messages - report.receipts;
if (lost !== 0 || report.runs !== report.options.messages) {
  console.error(`LOSS OR DUPLICATION: ${report.receipts} receipts, ${report.runs} runs`);
  process.exit(1);
}
