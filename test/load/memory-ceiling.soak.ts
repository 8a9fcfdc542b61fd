/**
 * The gateway's memory after repeated bursts stays under a ceiling: a real gateway process takes
 * three rounds of web messages (each drained, then a moment to go idle) and its RSS must stay
 * under MAX_RSS_MB after every round. The bound is 300 MB after each drain of 2,000-message
 * rounds (bench/load.ts, docs/benchmarks.md); these rounds are smaller, so the same figure leaves a
 * margin (measured 121–191 MB, load 1.5–9). A ceiling, not a timing test: the fake model answers at once.
 * Kept out of `npm test`; CI runs it with `npm run soak:short`.
 */
import { expect, test } from "bun:test";
import { formatReport, runWebBurst } from "./web-burst.ts";

const MESSAGES = 600;
const MAX_RSS_MB = 300;

test(`RSS stays under ${MAX_RSS_MB} MB after three bursts of ${MESSAGES} messages`, async () => {
  const report = await runWebBurst({
    messages: MESSAGES,
    sessions: 150,
    concurrency: 64,
    duplicates: 20,
    modelDelayMs: 20,
    drainTimeoutMs: 60_000,
    extraRounds: 2,
    // The idle collection looks every second once the lanes are gone.
    settleMs: 2500,
  });
  console.log(formatReport(report));

  expect(report.runsTerminal).toBe(MESSAGES);
  expect(report.rssSettledKb).toHaveLength(3);
  for (const kb of report.rssSettledKb) expect(kb / 1024).toBeLessThan(MAX_RSS_MB);
}, 180_000);
