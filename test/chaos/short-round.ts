/**
 * The short chaos run, kept out of `npm test` (it is a minute of real processes per engine) and run
 * by CI as `npm run soak:short`: a real gateway process against the Telegram and Discord emulators
 * and the fake LLM, SIGKILLed at every named kill point, with every kind of platform fault,
 * duplicates and replays, while people also make the model call MCP tools (some needing their
 * button press), send photos and voice notes, /forget a conversation and pair. On PostgreSQL a
 * second gateway always waits as a standby and takes over after each death that is not followed
 * by an armed start. It checks the same invariants as the long run
 * (`npm run soak -- --minutes 30 [--engine postgres [--standby]]`), on less traffic.
 */
import { expect } from "bun:test";
import type { ChaosEngine } from "./database.ts";
import { runChaos } from "./driver.ts";
import { formatReport } from "./report.ts";

const SEED = 20_261_130;

export const SHORT_ROUND_TIMEOUT_MS = 180_000;

export async function shortChaosRound(engine: ChaosEngine): Promise<void> {
  const standby = engine === "postgres";
  const report = await runChaos({
    engine,
    standby,
    seed: SEED,
    trafficMs: 20_000,
    messages: 20,
    schedules: 1,
    randomKills: 1,
    killPointRounds: 1,
    faultRate: 0.25,
    duplicateRate: 0.1,
    replayRate: 0.08,
    toolRate: 0.15,
    forgets: 1,
    // A kill while the pairing code's message is being sent leaves it ambiguous (held for an
    // operator, as it should): the operator watching during the traffic sends it again, as a
    // person would who finds it missing from the chat.
    pairings: 1,
    operatorEveryMs: 5_000,
    mediaRate: 0.15,
    armedWindowMs: 6_000,
    settleTimeoutMs: 60_000,
  });
  process.stdout.write(formatReport(report));

  expect(report.violations).toEqual([]);
  expect(report.settled).toBe(true);
  // The run exercised what it claims to: every kill point fired, every fault kind happened.
  expect(report.kills.killPointsMissed).toEqual([]);
  expect(report.faults.rateLimited).toBeGreaterThan(0);
  expect(report.faults.serverErrors).toBeGreaterThan(0);
  expect(report.faults.resets).toBeGreaterThan(0);
  expect(report.faults.hangs).toBeGreaterThan(0);
  expect(report.duplicates.immediate + report.duplicates.replays).toBeGreaterThan(0);
  expect(report.messages.schedules).toBeGreaterThanOrEqual(1);
  expect(report.messages.toolCalls).toBeGreaterThan(0);
  expect(report.presses.approve).toBeGreaterThan(0);
  expect(report.toolEffects).toBeGreaterThan(0);
  expect(report.messages.forgets).toBe(1);
  expect(report.pairings).toHaveLength(1);
  expect(report.messages.photos + report.messages.voiceNotes).toBeGreaterThan(0);
  if (standby) expect(report.kills.takeovers).toBeGreaterThan(0);
}
