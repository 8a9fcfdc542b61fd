/**
 * A burst of messages at once through the web channel of a real gateway process: none lost, none
 * duplicated (replays recognised), every run finished by the fast fake model, and the gateway's
 * memory bounded. Kept out of `npm test`; CI runs it with `npm run soak:short`. Timing targets (2,000 in under 10 s) are measured by bench/load.ts and recorded
 * in docs/benchmarks.md, not asserted here: a timed test on a shared machine proves nothing.
 */
import { expect, test } from "bun:test";
import { formatReport, runWebBurst } from "./web-burst.ts";

const MESSAGES = 400;
const DUPLICATES = 40;
/**
 * The gateway may grow while holding 2,000 runs' worth of state; it must not balloon. Read at the
 * drain, before the idle collection (garbage included); memory-ceiling.soak.ts checks it once idle.
 */
const MAX_RSS_GROWTH_KB = 400 * 1024;

test(`a burst of ${MESSAGES} messages is admitted with no loss and no duplicate`, async () => {
  const report = await runWebBurst({
    messages: MESSAGES,
    sessions: 100,
    concurrency: 64,
    duplicates: DUPLICATES,
    modelDelayMs: 3000,
    drainTimeoutMs: 15_000,
  });
  console.log(formatReport(report));

  expect(report.statuses).toEqual({ "202": MESSAGES });
  expect(report.outcomes).toEqual({ admitted: MESSAGES });
  expect(report.duplicateOutcomes).toEqual({ duplicate: DUPLICATES });
  expect(report.runs).toBe(MESSAGES);
  expect(report.receipts).toBe(MESSAGES);
  expect(report.distinctReceiptKeys).toBe(MESSAGES);
  expect(report.runsTerminal).toBe(MESSAGES);
  expect(report.modelCalls).toBe(MESSAGES);
  expect(report.rssKb.afterDrain - report.rssKb.before).toBeLessThan(MAX_RSS_GROWTH_KB);
  // Nothing per conversation stays in the process once its work is done.
  expect(report.lanesAfterRound).toEqual([0]);
}, 120_000);
