import type { ChaosReport } from "./driver.ts";
import { summarizeRss } from "./vitals.ts";

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const ms = (value: number | null) => (value === null ? "n/a" : `${value} ms`);

/** The counts a chaos run prints, one fact per line, then every violation. */
export function formatReport(report: ChaosReport): string {
  const points = Object.entries(report.kills.killPoints)
    .map(([point, times]) => `${point}×${times}`)
    .join(", ");
  const f = report.faults;
  const t = report.timing;
  const lines = [
    `seed ${report.seed} on ${report.engine}${report.standby ? " with a standby" : ""}, ${(report.elapsedMs / 1000).toFixed(1)} s, settled: ${report.settled ? "yes" : "NO"}`,
    `messages: ${report.messages.answerable} answerable (${report.messages.toolCalls} with a tool call, ${report.messages.idempotentToolCalls} of them idempotent, ${report.messages.approvals} with one needing approval), ${report.messages.ignorable} ignorable, ${report.messages.schedules} schedules, ${report.messages.stops} /stop, ${report.messages.exports} /export`,
    `runs: ${
      Object.entries(report.runs)
        .map(([state, n]) => `${n} ${state}`)
        .join(", ") || "none"
    }`,
    `approvals: ${
      Object.entries(report.approvals)
        .map(([state, n]) => `${n} ${state}`)
        .join(", ") || "none"
    }; presses: ${report.presses.approve} approve, ${report.presses.deny} deny, ${report.presses.again} pressed again, ${report.presses.replays} replayed; ${report.toolEffects} tool effects, ${report.toolReruns} idempotent calls run again`,
    `child agents: ${report.spawns.waited} spawns waited for, ${report.spawns.notWaited} not; children ${
      Object.entries(report.spawns.children)
        .map(([state, n]) => `${n} ${state}`)
        .join(", ") || "none"
    }`,
    `conversation API: ${report.api.messages} messages, ${report.api.sends} proactive sends, ${report.api.repeats} requests repeated with their key`,
    `media: ${report.messages.photos} photos, ${report.messages.voiceNotes} voice notes`,
    `forget: ${report.messages.forgets} /forget confirm, ${report.messages.purged} messages purged`,
    ...report.pairings.map(
      (p) =>
        `pairing ${p.user}: ${p.codesIssued} code issued, ${p.grants} grant, approvals answered ${p.redemptions.join(", ")}`,
    ),
    `kills: ${report.kills.sigkills} SIGKILLs by the driver, kill points fired: ${points || "none"}${
      report.kills.killPointsMissed.length > 0 ? ` (missed: ${report.kills.killPointsMissed.join(", ")})` : ""
    }; ${report.kills.restarts} processes started${
      report.kills.takeovers > 0 ? `, ${report.kills.takeovers} standby takeovers` : ""
    }`,
    `faults: ${f.total} (${f.rateLimited} rate limits, ${f.serverErrors} 5xx, ${f.resets} resets, ${f.hangs} hangs)`,
    `duplicates: ${report.duplicates.immediate} immediate, ${report.duplicates.replays} replays, ${report.duplicates.discordRedeliveries} Discord redeliveries after restarts`,
    `edits and deletes of queued messages: ${report.duplicates.editsAndDeletes} (each delivered twice)`,
    `whatsapp: ${report.messages.whatsapp} answerable messages; ${report.whatsappWebhooks.posts} webhook POSTs, ${report.whatsappWebhooks.redelivered} redelivered by Meta after a failed attempt; ${report.whatsappKilledMidSend} sends killed right after WhatsApp accepted them; ${report.resolvedByPlatformStatus} records resolved by platform status`,
    `matrix: ${report.messages.matrix} answerable messages; ${report.matrix.replayedEvents} sync events delivered again; send faults met: ${report.matrix.faults.rateLimited} M_LIMIT_EXCEEDED, ${report.matrix.faults.serverErrors} 5xx, ${report.matrix.faults.resetsAfterEffect} resets after the event was stored; ${report.matrix.killedMidSend} sends killed right after the homeserver stored them; ${report.matrix.retriedSameTxn} transactions sent again under the same txnId`,
    `accounts: ${report.accounts
      .map(
        (a) =>
          `${a.channel} ${a.name} (${a.account}) ${a.inputs} inputs, ${a.records} outbox records, ${a.botMessages} messages sent`,
      )
      .join("; ")}`,
    `same-account: ${report.accountTied.records} outbox records and ${report.accountTied.messages} bot messages named an input, checked against the account that received it; violations: ${report.violations.filter((v) => v.invariant === "same-account").length}`,
    `model calls: ${report.modelCalls} (${report.repeatedModelCalls} for resumed runs; ${report.resumedRuns} runs resumed), ${report.housekeepingModelCalls} for compaction`,
    `ambiguous records: ${report.ambiguousRecords} (operator: ${report.operator.filter((d) => d.action === "resolved-delivered").length} seen and resolved, ${report.operator.filter((d) => d.action === "retried").length} retried)`,
    ...(report.outcomesAsMessages > 0
      ? [
          `approval decisions sent as a new message: ${report.outcomesAsMessages} (their prompts were resolved as delivered without a message id)`,
        ]
      : []),
    `time: opening ${seconds(t.openingKindsMs)} traffic kinds + ${seconds(t.openingChainMs)} kill chain, ${seconds(t.randomMs)} random traffic, ${seconds(t.settleMs)} settling, ${seconds(t.stopMs)} stopping; ${seconds(t.startingMs)} of it waiting for gateways to start, ${seconds(t.takeoverMs)} for takeovers`,
    `volume: ${report.vitals.userMessages} user messages; ${report.kills.sigkills + Object.values(report.kills.killPoints).reduce((a, b) => a + (b ?? 0), 0)} deaths by SIGKILL (driver and kill points)`,
    `reply time under chaos (post to delivered, ${report.vitals.reply.count} answers): p50 ${ms(report.vitals.reply.p50Ms)}, p99 ${ms(report.vitals.reply.p99Ms)}, max ${ms(report.vitals.reply.maxMs)}`,
    `gateway RSS: ${summarizeRss(report.vitals.rss, report.vitals.startedAtMs)}`,
    `violations: ${report.violations.length}`,
    ...report.violations.map((v) => `  [${v.invariant}] ${v.subject}: ${v.detail}`),
  ];
  if (report.keptDir) lines.push(`kept for inspection: ${report.keptDir}`);
  return `${lines.join("\n")}\n`;
}
