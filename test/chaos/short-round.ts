/**
 * The short chaos run, kept out of `npm test` and run by CI as `npm run soak:short`: a real gateway
 * process against the Telegram (two bots: the default and the account `support`), Discord, WhatsApp
 * and Matrix emulators and the fake LLM, on each engine (on
 * PostgreSQL a second gateway always waits as a standby and takes over after a death that is not
 * followed by an armed start). It checks the same invariants as the long run
 * (`npm run soak -- --minutes 30 [--engine postgres [--standby]]`), on less traffic.
 *
 * What it covers follows from the driver's opening (opening.ts), not from chance or the machine's
 * speed: every traffic kind once without faults (text everywhere, a duplicate and a late replay,
 * ignorable chatter, supersede, interrupt, /stop, both kinds of tool call, approvals approved,
 * denied, pressed twice and left to expire, a photo, a voice note, a schedule, /export, /forget,
 * pairing, child agents, conversation API calls), then every kill point once, with every fault kind met first, and a WhatsApp send
 * killed right after WhatsApp accepted it, and a Matrix send killed right after the homeserver
 * stored it; the random traffic after it only adds. The run ends when the gateway has settled; the test's timeout only bounds a run
 * that stopped making progress.
 */
import { expect } from "bun:test";
import type { ChaosEngine } from "./database.ts";
import { runChaos } from "./driver.ts";
import { formatReport } from "./report.ts";
import { KILL_POINTS } from "./supervisor.ts";

const SEED = 20_261_130;

/** A bound on a stuck run (a quiet machine takes well under a minute, a busy one about two). */
export const SHORT_ROUND_TIMEOUT_MS = 300_000;

export async function shortChaosRound(engine: ChaosEngine): Promise<void> {
  const standby = engine === "postgres";
  const startedAtMs = Date.now();
  const report = await runChaos({
    engine,
    standby,
    seed: SEED,
    // The opening takes most of it; a few seconds of random traffic with one random kill follow.
    trafficMs: 30_000,
    messages: 12,
    schedules: 0,
    randomKills: 1,
    killPointRounds: 0,
    faultRate: 0.25,
    duplicateRate: 0.1,
    replayRate: 0.08,
    toolRate: 0.15,
    mediaRate: 0.15,
    spawnRate: 0.1,
    apiRate: 0.1,
    editRate: 0.15,
    operatorEveryMs: 5_000,
    armedWindowMs: 20_000,
    // Long enough that a Deny pressed while a gateway restarts under a loaded CI machine (each start
    // can take 10 s there) still meets a pending approval; the one left to expire does so in settling.
    approvalTimeoutMs: 15_000,
    settleTimeoutMs: 90_000,
    log: (line) =>
      process.stdout.write(`[${engine} +${((Date.now() - startedAtMs) / 1000).toFixed(1)} s] ${line}\n`),
  });
  process.stdout.write(formatReport(report));

  expect(report.violations).toEqual([]);
  expect(report.settled).toBe(true);
  // What the opening played, kill points and fault kinds included.
  expect(report.kills.killPointsMissed).toEqual([]);
  expect(Object.keys(report.kills.killPoints).sort()).toEqual([...KILL_POINTS].sort());
  expect(report.faults.rateLimited).toBeGreaterThan(0);
  expect(report.faults.serverErrors).toBeGreaterThan(0);
  expect(report.faults.resets).toBeGreaterThan(0);
  expect(report.faults.hangs).toBeGreaterThan(0);
  expect(report.duplicates.immediate).toBeGreaterThan(0);
  expect(report.duplicates.replays).toBeGreaterThan(0);
  expect(report.duplicates.discordRedeliveries).toBeGreaterThan(0);
  expect(report.messages.ignorable).toBeGreaterThan(0);
  expect(report.runs.superseded).toBeGreaterThan(0);
  expect(report.runs.interrupted).toBeGreaterThan(0);
  expect(report.messages.stops).toBeGreaterThan(0);
  expect(report.messages.exports).toBeGreaterThan(0);
  expect(report.messages.schedules).toBeGreaterThanOrEqual(2);
  expect(report.messages.idempotentToolCalls).toBeGreaterThan(0);
  expect(report.toolReruns).toBeGreaterThan(0);
  expect(report.toolEffects).toBeGreaterThan(0);
  expect(report.presses.approve).toBeGreaterThanOrEqual(2);
  expect(report.presses.deny).toBeGreaterThan(0);
  expect(report.presses.again).toBeGreaterThan(0);
  expect(report.approvals.approved).toBeGreaterThan(0);
  expect(report.approvals.denied).toBeGreaterThan(0);
  expect(report.approvals.expired).toBeGreaterThan(0);
  expect(report.messages.photos).toBeGreaterThan(0);
  expect(report.messages.voiceNotes).toBeGreaterThan(0);
  // Child agents: one child per spawn call and one result per child (child-once, among the invariants).
  expect(report.spawns.waited).toBeGreaterThan(0);
  expect(report.spawns.notWaited).toBeGreaterThan(0);
  expect(report.spawns.children.delivered).toBeGreaterThan(0);
  // Conversation API: one run per key, one outbox record per proactive send (api-once).
  expect(report.api.messages).toBeGreaterThan(0);
  expect(report.api.sends).toBeGreaterThan(0);
  expect(report.api.repeats).toBeGreaterThan(0);
  // Edits and deletes of queued messages (edit-once, deleted-unanswered), on three platforms.
  expect(report.duplicates.editsAndDeletes).toBeGreaterThanOrEqual(5);
  expect(report.messages.forgets).toBe(1);
  expect(report.pairings).toHaveLength(1);
  // WhatsApp: answered once, Meta's redeliveries changed nothing (the invariants), and the send
  // killed right after WhatsApp accepted it was settled by its status webhook, with no operator.
  expect(report.messages.whatsapp).toBeGreaterThan(0);
  expect(report.whatsappWebhooks.redelivered).toBeGreaterThan(0);
  expect(report.whatsappKilledMidSend).toBeGreaterThan(0);
  expect(report.resolvedByPlatformStatus).toBeGreaterThanOrEqual(report.whatsappKilledMidSend);
  // Matrix: answered once (the invariants, matrix-once among them); the send killed right after the
  // homeserver stored it was sent again under its txnId, and every send fault kind was met.
  expect(report.messages.matrix).toBeGreaterThan(0);
  expect(report.matrix.replayedEvents).toBeGreaterThan(0);
  expect(report.matrix.killedMidSend).toBeGreaterThan(0);
  expect(report.matrix.retriedSameTxn).toBeGreaterThanOrEqual(report.matrix.killedMidSend);
  expect(report.matrix.faults.rateLimited).toBeGreaterThan(0);
  expect(report.matrix.faults.serverErrors).toBeGreaterThan(0);
  expect(report.matrix.faults.resetsAfterEffect).toBeGreaterThan(0);
  // Two Telegram bots (the default and the account `support`): each received inputs and answered
  // through itself (the same-account invariant, among the violations above).
  expect(report.accounts.map((a) => a.name).sort()).toEqual(["default", "support"]);
  for (const account of report.accounts) {
    expect(account.inputs).toBeGreaterThan(0);
    expect(account.records).toBeGreaterThan(0);
    expect(account.botMessages).toBeGreaterThan(0);
  }
  expect(report.accountTied.records).toBeGreaterThan(0);
  expect(report.accountTied.messages).toBeGreaterThan(0);
  if (standby) expect(report.kills.takeovers).toBeGreaterThan(0);
}
