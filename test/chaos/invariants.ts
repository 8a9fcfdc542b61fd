/**
 * The promises switchboard makes, checked from the outside after a chaos run has settled. Pure
 * functions of a Snapshot, so each check is itself tested against hand-made broken snapshots.
 *
 * How a model call is accounted for (the `model-calls` invariant): a call is attributed to the run
 * whose input carries the id found last in the call's last user message. Every acquisition of a
 * run (its fencing token counts them) continues the run from its last persisted step, so a kill
 * in the middle of a step makes the next owner call the model again for that step; the scripted
 * answers are one step long. Hence: calls(run) <= acquisitions(run), and a completed run with an
 * answer has at least one call. A duplicate or replayed update never acquires a run, so a model
 * call it caused breaks the bound.
 */
import { txnIdFor } from "../../channels/matrix/keys.ts";
import { finalAnswerMarkdown } from "../../outbox/final-text.ts";
import { isTerminalState, type RunState, type TerminalRunState } from "../../src/runtime/types.ts";
import type { LeaseSnapshot } from "./leases.ts";
import {
  type ChatMessage,
  idsIn,
  type OutboxRow,
  type RunRow,
  type SentInput,
  type Snapshot,
} from "./snapshot.ts";

export type InvariantName =
  | "admitted"
  | "one-terminal-run"
  | "delivered-once"
  | "superseded-silent"
  | "model-calls"
  | "schedule-fired-once"
  | "order"
  | "tool-effect-once"
  | "approval-decided-once"
  | "purged-stays-gone"
  | "pairing-once"
  | "media-fetched"
  | "status-settles"
  | "matrix-once"
  | "child-once"
  | "api-once"
  | "edit-once"
  | "deleted-unanswered"
  | "same-account"
  | "lease-expired"
  | "settled";

export interface Violation {
  invariant: InvariantName;
  /** The message id, run, record or schedule concerned. */
  subject: string;
  detail: string;
}

export interface InvariantReport {
  violations: Violation[];
  /** Outbox records that were `ambiguous` at some point (at most once in the chat). */
  ambiguousRecords: number;
  /** Records a platform's status report settled (WhatsApp: a send whose outcome a death or a lost answer left unknown). */
  resolvedByPlatformStatus: number;
  /** Matrix transactions sent again with the same txnId (after a kill or a lost answer) and deduped by the homeserver. */
  matrixRetriedSameTxn: number;
  /** Runs an owner acquired more than once (resumed after a kill). */
  resumedRuns: number;
  /** Model calls that resumed a run (calls beyond the first per run). */
  repeatedModelCalls: number;
  /**
   * Approval decisions shown as a new message: the prompt's send was ambiguous and the operator
   * resolved it as delivered (no receipt: its message id is unknown), so it could not be edited.
   */
  outcomesAsMessages: number;
  /**
   * What `same-account` held to an input's account: outbox records and bot messages that name an
   * input received by a known account (its answer, its approval prompt, its schedule's notice…).
   */
  accountTied: { records: number; messages: number };
}

const answerMarker = (id: string) => `a-${id}`;
const ANSWER_MARKER = /\ba-([qstprfmgyke]\d{5})\b/;
/** Outbox records of an approval request: its prompt and the edit that shows the decision. */
const APPROVAL_RECORD = /^approval:[^:]+:(prompt|outcome)$/;

export function checkInvariants(snapshot: Snapshot): InvariantReport {
  const violations: Violation[] = [];
  const violate = (invariant: InvariantName, subject: string, detail: string) =>
    violations.push({ invariant, subject, detail });
  const runsById = new Map(snapshot.runs.map((r) => [r.id, r]));
  const runsHolding = new Map<string, RunRow[]>();
  for (const run of snapshot.runs) {
    for (const id of new Set(run.inputTexts.flatMap(idsIn)))
      runsHolding.set(id, [...(runsHolding.get(id) ?? []), run]);
  }

  checkAdmitted(snapshot, violate);
  checkTerminal(snapshot, runsById, runsHolding, violate);
  const delivered = checkDelivery(snapshot, runsById, violate);
  checkSupersededSilent(snapshot, violate);
  const calls = checkModelCalls(snapshot, runsHolding, violate);
  checkSchedules(snapshot, runsById, violate);
  checkOrder(snapshot, runsById, delivered, violate);
  checkToolEffects(snapshot, runsHolding, runsById, violate);
  checkApprovals(snapshot, runsById, violate);
  checkPurged(snapshot, runsHolding, violate);
  checkPairings(snapshot, violate);
  checkMedia(snapshot, runsHolding, violate);
  checkStatusSettles(snapshot, violate);
  checkMatrixOnce(snapshot, violate);
  checkChildren(snapshot, runsById, violate);
  checkApi(snapshot, runsHolding, violate);
  checkEditsAndDeletes(snapshot, runsHolding, violate);
  if (snapshot.leases) checkLeases(snapshot.leases, violate);
  const accountTied = checkSameAccount(snapshot, violate);
  if (snapshot.unconfirmedUpdates.length > 0) {
    violate("settled", "telegram", `updates never confirmed: ${snapshot.unconfirmedUpdates.join(", ")}`);
  }
  if (snapshot.unansweredWebhooks.length > 0) {
    violate(
      "settled",
      "whatsapp",
      `webhook deliveries never answered 200: ${snapshot.unansweredWebhooks.join(", ")}`,
    );
  }
  return {
    violations,
    ambiguousRecords: snapshot.outbox.filter((r) => r.everAmbiguous).length,
    resolvedByPlatformStatus: snapshot.outbox.filter((r) => r.resolvedByPlatformStatus).length,
    matrixRetriedSameTxn: snapshot.matrixTxns.filter((t) => t.repeats > 0).length,
    resumedRuns: snapshot.runs.filter((r) => r.acquisitions > 1).length,
    repeatedModelCalls: calls,
    outcomesAsMessages: snapshot.outbox.filter((r) => outcomeAsMessage(r, snapshot.outbox)).length,
    accountTied,
  };
}

type Violate = (invariant: InvariantName, subject: string, detail: string) => void;
type Receipt = Snapshot["receipts"][number];

/**
 * The receipt of an input: by channel and update key, and by account when the input names one
 * (two Telegram bots number their updates independently, so their keys collide).
 */
function receiptFinder(snapshot: Snapshot): (input: SentInput) => Receipt | undefined {
  const byKey = new Map<string, Receipt[]>();
  for (const receipt of snapshot.receipts) {
    const key = `${receipt.channel}:${receipt.key}`;
    byKey.set(key, [...(byKey.get(key) ?? []), receipt]);
  }
  return (input) =>
    byKey
      .get(`${input.channel}:${input.updateKey}`)
      ?.find((r) => input.account === undefined || r.account === undefined || r.account === input.account);
}

/** Every message that must be answered was admitted; every ignorable one never reached the model. */
function checkAdmitted(snapshot: Snapshot, violate: Violate): void {
  const receiptOf = receiptFinder(snapshot);
  for (const input of snapshot.sent) {
    const receipt = receiptOf(input);
    if (input.expect === "answer" && !receipt?.runId) {
      violate("admitted", input.id, `${input.place} update ${input.updateKey} was never admitted as a run`);
    }
    if (input.expect === "schedule" && !receipt?.outcome.startsWith("command:")) {
      violate("admitted", input.id, `the /in command (${input.place}) left no command receipt`);
    }
    if (input.expect === "command" && !receipt?.outcome.startsWith("command:")) {
      violate("admitted", input.id, `the command (${input.place}) left no command receipt`);
    }
    if (input.expect === "ignored") {
      if (receipt?.runId) violate("admitted", input.id, `ignorable message became run ${receipt.runId}`);
      if (snapshot.modelSawText.includes(input.id))
        violate("admitted", input.id, "the model saw an ignorable message");
    }
  }
}

/** Each accepted input is in exactly one run, that run ended, and an absorbed/superseded run points at one that answered. */
function checkTerminal(
  snapshot: Snapshot,
  runsById: Map<string, RunRow>,
  runsHolding: Map<string, RunRow[]>,
  violate: Violate,
): void {
  const receiptOf = receiptFinder(snapshot);
  for (const run of snapshot.runs) {
    if (!isTerminalState(run.state as RunState)) violate("one-terminal-run", run.id, `still ${run.state}`);
    if (run.state === "absorbed") {
      const into = run.absorbedInto ? runsById.get(run.absorbedInto) : undefined;
      if (into?.state !== "completed") {
        violate(
          "one-terminal-run",
          run.id,
          `absorbed into ${run.absorbedInto ?? "nothing"} (${into?.state ?? "missing"})`,
        );
      }
    }
    if (run.state === "superseded") {
      const successor = snapshot.runs.find(
        (r) =>
          r.conversationId === run.conversationId &&
          r.queueSeq > run.queueSeq &&
          r.state !== "superseded" &&
          isTerminalState(r.state as RunState),
      );
      if (!successor)
        violate("one-terminal-run", run.id, "superseded, but no later run of its conversation ended");
    }
  }
  for (const input of snapshot.sent) {
    if (input.expect === "ignored") continue;
    const holders = runsHolding.get(input.id) ?? [];
    if (input.expect === "answer") {
      if (holders.length !== 1) {
        violate(
          "one-terminal-run",
          input.id,
          `held by ${holders.length} runs (${holders.map((r) => r.id).join(", ")})`,
        );
        continue;
      }
      const receipt = receiptOf(input);
      if (receipt?.runId && receipt.runId !== holders[0]?.id) {
        violate(
          "one-terminal-run",
          input.id,
          `receipt names ${receipt.runId} but ${holders[0]?.id} holds the input`,
        );
      }
    }
  }
}

/** The text to look for in the chat: the answer's marker, else the record's first line. */
export function fingerprintOf(markdown: string): string | null {
  const marker = ANSWER_MARKER.exec(markdown)?.[0];
  if (marker) return marker;
  const firstLine = withoutMarkup(markdown.split("\n")[0] ?? "").trim();
  return firstLine.length >= 12 ? firstLine.slice(0, 40) : null;
}

/** Markdown markup and escapes differ between the record and what the chat shows: compare without them. */
function withoutMarkup(text: string): string {
  return text.replace(/[_*`~\\]/g, "");
}

export function countIn(messages: readonly ChatMessage[], text: string): number {
  const needle = withoutMarkup(text);
  return messages.filter((m) => withoutMarkup(m.text).includes(needle)).length;
}

/**
 * Delivered records appear exactly once, ambiguous ones at most once, nothing stays undelivered,
 * and every run that has something to say has a record. Returns the delivered records per chat.
 */
function checkDelivery(snapshot: Snapshot, runsById: Map<string, RunRow>, violate: Violate): OutboxRow[] {
  const shown: OutboxRow[] = [];
  const recordsByRun = new Map<string, OutboxRow[]>();
  const fingerprints = new Map<string, number>();
  // A purge drops the text of its records, and a purged text may be what another record shows
  // (two "Done: I deleted…" replies): in those chats a fingerprint proves nothing unique. The purged
  // record may have been shown whatever its state now (an ambiguous one the purge cancelled).
  const purgedTextChats = new Set(snapshot.outbox.filter((r) => r.markdown === "").map((r) => r.chat));
  for (const record of snapshot.outbox) {
    if (!APPROVAL_RECORD.test(record.key))
      recordsByRun.set(record.runId, [...(recordsByRun.get(record.runId) ?? []), record]);
    const fingerprint = fingerprintOf(record.markdown);
    if (fingerprint && purgedTextChats.has(record.chat)) fingerprints.set(`${record.chat}|${fingerprint}`, 2);
    else if (fingerprint)
      fingerprints.set(
        `${record.chat}|${fingerprint}`,
        (fingerprints.get(`${record.chat}|${fingerprint}`) ?? 0) + 1,
      );
  }
  for (const record of snapshot.outbox) {
    const run = runsById.get(record.runId);
    if (run?.state === "superseded" || run?.state === "absorbed") continue; // superseded-silent checks those
    const messages = snapshot.botMessages[record.chat] ?? [];
    if (APPROVAL_RECORD.test(record.key)) {
      checkApprovalRecord(record, messages, violate);
      continue;
    }
    if (record.channel === "api") {
      // The api channel shows nothing anywhere: a send only records the delivery (api-once).
      if (record.state !== "delivered" && record.state !== "cancelled")
        violate("delivered-once", `${record.id} (${record.key})`, `an api answer still ${record.state}`);
      continue;
    }
    const fingerprint = fingerprintOf(record.markdown);
    const unique = fingerprint !== null && fingerprints.get(`${record.chat}|${fingerprint}`) === 1;
    const count = unique ? countIn(messages, fingerprint) : null;
    const where = `${record.id} (${record.key}) in ${record.chat}`;
    switch (record.state) {
      case "delivered":
        if (count !== null && count !== 1)
          violate("delivered-once", where, `delivered, but shown ${count} times`);
        if (count === null && !record.receiptIds.every((id) => messages.some((m) => m.id === id))) {
          violate("delivered-once", where, "delivered, but its platform message is not in the chat");
        }
        shown.push(record);
        break;
      case "ambiguous":
        if (count !== null && count > 1)
          violate("delivered-once", where, `ambiguous and shown ${count} times`);
        if (count === 1) shown.push(record);
        break;
      case "cancelled":
        if (count !== null && count > 0)
          violate("delivered-once", where, `cancelled, but shown ${count} times`);
        break;
      default:
        violate("delivered-once", where, `never delivered: still ${record.state}`);
    }
  }
  // A child's answer goes to its parent as an input, never to a chat (checkChildren).
  const childConversations = new Set(snapshot.children.map((c) => c.conversationId));
  for (const run of snapshot.runs) {
    if (!isTerminalState(run.state as RunState)) continue;
    const records = recordsByRun.get(run.id) ?? [];
    if (childConversations.has(run.conversationId)) {
      if (records.length > 0) violate("delivered-once", run.id, "a child's run has outbox records");
      continue;
    }
    if (records.length > 1) violate("delivered-once", run.id, `has ${records.length} outbox records`);
    const expected = finalAnswerMarkdown(run.state as TerminalRunState, run.answerText);
    if (expected.trim() !== "" && records.length === 0) {
      violate("delivered-once", run.id, `ended ${run.state} with an answer but has no outbox record`);
    }
  }
  return shown;
}

/**
 * An approval prompt, edited in place to show the decision: the call's arguments (which name the
 * input id) appear in at most one message of the bot, besides the answer; a delivered prompt or
 * outcome edit names a message that is in the chat.
 */
/** A delivered decision whose prompt was resolved as delivered without a message id. */
function outcomeAsMessage(record: OutboxRow, outbox: readonly OutboxRow[]): boolean {
  if (!record.key.endsWith(":outcome") || record.state !== "delivered") return false;
  const prompt = outbox.find((r) => r.key === record.key.replace(/:outcome$/, ":prompt"));
  return prompt?.everAmbiguous === true && prompt.receiptIds.length === 0;
}

function checkApprovalRecord(record: OutboxRow, messages: readonly ChatMessage[], violate: Violate): void {
  const where = `${record.id} (${record.key}) in ${record.chat}`;
  const id = idsIn(record.markdown)[0];
  const shown = id
    ? messages.filter((m) => m.text.includes(`"${id}"`) && !ANSWER_MARKER.test(m.text)).length
    : 0;
  if (shown > 1) violate("delivered-once", where, `the approval request for ${id} is shown ${shown} times`);
  switch (record.state) {
    case "delivered":
      if (!record.receiptIds.every((receipt) => messages.some((m) => m.id === receipt)))
        violate("delivered-once", where, "delivered, but its platform message is not in the chat");
      if (record.key.endsWith(":prompt") && shown !== 1)
        violate("delivered-once", where, `delivered, but the request for ${id} is shown ${shown} times`);
      break;
    case "ambiguous":
    case "cancelled":
      break;
    default:
      violate("delivered-once", where, `never delivered: still ${record.state}`);
  }
}

/**
 * No answer of a superseded run is visible anywhere, except at most once when its stream record
 * was ambiguous: a live preview whose send lost its answer may be on the platform, unknown to us.
 */
function checkSupersededSilent(snapshot: Snapshot, violate: Violate): void {
  const allMessages = Object.values(snapshot.botMessages).flat();
  for (const run of snapshot.runs) {
    if (run.state !== "superseded") continue;
    const allowed = snapshot.outbox.some((r) => r.runId === run.id && r.everAmbiguous) ? 1 : 0;
    for (const id of new Set(run.inputTexts.flatMap(idsIn))) {
      const shown = countIn(allMessages, answerMarker(id));
      if (shown > allowed) {
        violate(
          "superseded-silent",
          run.id,
          `its answer to ${id} is shown ${shown} times${allowed ? " (its record was ambiguous: at most once)" : ""}`,
        );
      }
    }
  }
}

/**
 * Returns how many calls resumed a run (beyond each run's first step). A run with tool calls
 * takes one call per step, and a kill mid-step repeats that step, so an owner that persisted
 * `steps` steps made at most `acquisitions + steps - 1` calls. The run an approval decision
 * queues continues the asking run's input: its calls count with that run's.
 */
function checkModelCalls(snapshot: Snapshot, runsHolding: Map<string, RunRow[]>, violate: Violate): number {
  const calls = new Map<string, number>();
  const purgedIds = new Set(snapshot.sent.filter((s) => s.expect === "purged").map((s) => s.id));
  snapshot.modelRequests.forEach((text, index) => {
    const id = idsIn(text).at(-1);
    const run = id === undefined ? undefined : runsHolding.get(id)?.[0];
    if (!run && id !== undefined && purgedIds.has(id)) return; // its run went with the purge: checkPurged
    if (!run) {
      violate(
        "model-calls",
        `request #${index}`,
        `no run holds the input it answers (${JSON.stringify(text.slice(0, 80))})`,
      );
      return;
    }
    calls.set(run.id, (calls.get(run.id) ?? 0) + 1);
  });
  const runsById = new Map(snapshot.runs.map((r) => [r.id, r]));
  const successors = new Map<string, RunRow[]>();
  for (const approval of snapshot.approvals) {
    const successor = approval.successorRunId ? runsById.get(approval.successorRunId) : undefined;
    if (successor) successors.set(approval.runId, [...(successors.get(approval.runId) ?? []), successor]);
  }
  const successorIds = new Set([...successors.values()].flat().map((r) => r.id));
  // Each recorded step is one call, and each acquisition may add one call that no step recorded:
  // the one a kill cut short (then made again) or, in a run stopped by a newer message or an
  // interrupt, the call in flight when it stopped. A completed run recorded its last call.
  const bound = (r: RunRow) =>
    r.state === "completed" ? r.acquisitions + Math.max(0, r.steps - 1) : r.acquisitions + r.steps;
  let repeated = 0;
  for (const run of snapshot.runs) {
    if (successorIds.has(run.id)) continue; // counted with the run that asked
    const group = [run, ...(successors.get(run.id) ?? [])];
    const made = calls.get(run.id) ?? 0;
    const steps = group.reduce((sum, r) => sum + Math.max(1, r.steps), 0);
    repeated += Math.max(0, made - steps);
    const allowed = group.reduce((sum, r) => sum + bound(r), 0);
    if (made > allowed) {
      violate(
        "model-calls",
        run.id,
        `${made} model calls but only ${group.map((r) => `${r.acquisitions} acquisitions and ${r.steps} steps`).join(" + ")}: a duplicate or replay reached the model`,
      );
    }
    if (made === 0 && group.some((r) => r.state === "completed" && ANSWER_MARKER.test(r.answerText))) {
      violate("model-calls", run.id, "completed with a model answer but the model was never called");
    }
  }
  return repeated;
}

/** Each `/in` made one schedule whose single occurrence admitted one run that ended. */
function checkSchedules(snapshot: Snapshot, runsById: Map<string, RunRow>, violate: Violate): void {
  for (const input of snapshot.sent) {
    if (input.expect !== "schedule") continue;
    const schedules = snapshot.schedules.filter((s) => idsIn(s.prompt).includes(input.id));
    if (schedules.length !== 1) {
      violate(
        "schedule-fired-once",
        input.id,
        `${schedules.length} schedules were created for one /in command`,
      );
      continue;
    }
    const schedule = schedules[0]!;
    if (schedule.state !== "completed")
      violate("schedule-fired-once", schedule.id, `schedule is ${schedule.state}`);
    const occurrences = snapshot.occurrences.filter((o) => o.scheduleId === schedule.id);
    const dispatched = occurrences.filter((o) => o.state === "dispatched");
    if (occurrences.length !== 1 || dispatched.length !== 1) {
      violate(
        "schedule-fired-once",
        schedule.id,
        `occurrences: ${occurrences.map((o) => `${o.scheduledForMs}=${o.state}`).join(", ") || "none"}`,
      );
      continue;
    }
    const run = dispatched[0]?.runId ? runsById.get(dispatched[0].runId) : undefined;
    if (!run?.inputTexts.some((t) => t.includes(input.id))) {
      violate(
        "schedule-fired-once",
        schedule.id,
        `occurrence names run ${dispatched[0]?.runId}, which does not hold it`,
      );
    }
  }
}

/** In queue places, answers appear in the order their runs were admitted. */
function checkOrder(
  snapshot: Snapshot,
  runsById: Map<string, RunRow>,
  shown: OutboxRow[],
  violate: Violate,
): void {
  const orderedChats = new Set(snapshot.sent.filter((s) => s.ordered).map((s) => s.chat));
  for (const chat of orderedChats) {
    const messages = snapshot.botMessages[chat] ?? [];
    const placed = shown
      .filter((r) => r.chat === chat && runsById.has(r.runId) && ANSWER_MARKER.test(r.markdown))
      .map((r) => ({
        record: r,
        queueSeq: runsById.get(r.runId)!.queueSeq,
        position: messages.findIndex((m) => m.text.includes(ANSWER_MARKER.exec(r.markdown)![0])),
      }))
      .filter((p) => p.position >= 0)
      .sort((a, b) => a.queueSeq - b.queueSeq);
    for (let i = 1; i < placed.length; i += 1) {
      const before = placed[i - 1]!;
      const after = placed[i]!;
      if (after.position < before.position) {
        violate(
          "order",
          chat,
          `${after.record.runId} (admitted after ${before.record.runId}) is shown before it`,
        );
      }
    }
  }
}

const linesOf = (effects: readonly string[], line: string) => effects.filter((l) => l === line).length;

/**
 * Tool calls that run at once: `t…` (`ledger_slow_append`, not idempotent) began at most once,
 * `r…` (`retry_slow_append`, idempotent) at most twice (once more after a crash); each ended at
 * most as often as it began. A completed answer that reports the effect has it; one whose call
 * never ended says the outcome is unknown.
 */
function checkToolEffects(
  snapshot: Snapshot,
  runsHolding: Map<string, RunRow[]>,
  runsById: Map<string, RunRow>,
  violate: Violate,
): void {
  for (const input of snapshot.sent) {
    const idempotent = input.id.startsWith("r");
    if (!input.id.startsWith("t") && !idempotent) continue;
    const began = linesOf(snapshot.toolEffects, `begin ${input.id}`);
    const ended = linesOf(snapshot.toolEffects, `end ${input.id}`);
    if (!idempotent && began > 1)
      violate("tool-effect-once", input.id, `the call began ${began} times (not idempotent)`);
    if (idempotent && began > 2)
      violate("tool-effect-once", input.id, `the call began ${began} times (idempotent: at most twice)`);
    if (ended > began) violate("tool-effect-once", input.id, `ended ${ended} times but began ${began}`);
    for (const run of runsHolding.get(input.id) ?? []) {
      if (run.state !== "completed" || !runsById.has(run.id)) continue;
      if (run.answerText.includes(`slowly appended "${input.id}"`) && ended === 0)
        violate(
          "tool-effect-once",
          run.id,
          `its answer reports the effect of ${input.id}, which never ended`,
        );
      if (began > 0 && ended === 0 && !run.answerText.includes("outcome unknown"))
        violate(
          "tool-effect-once",
          run.id,
          `the call for ${input.id} began, never ended, and the answer does not say its outcome is unknown`,
        );
    }
  }
}

/**
 * Calls that need approval (`p…`, `notes_append_note`): one request per input; its effect only
 * when approved, at most once; each decision held by at most one run, the successor it names.
 */
function checkApprovals(snapshot: Snapshot, runsById: Map<string, RunRow>, violate: Violate): void {
  for (const input of snapshot.sent) {
    if (!input.id.startsWith("p")) continue;
    const requests = snapshot.approvals.filter((a) => idsIn(a.input).includes(input.id));
    const effects = linesOf(snapshot.toolEffects, input.id);
    if (requests.length > 1)
      violate("approval-decided-once", input.id, `${requests.length} approval requests for one call`);
    if (effects > 1) violate("tool-effect-once", input.id, `the approved call ran ${effects} times`);
    if (effects > 0 && !requests.some((a) => a.state === "approved"))
      violate(
        "tool-effect-once",
        input.id,
        `the call ran, but its request is ${requests.map((a) => a.state).join(", ") || "missing"}`,
      );
  }
  for (const approval of snapshot.approvals) {
    const holders = new Set(
      snapshot.approvalResponses.filter((r) => r.approvalId === approval.id).map((r) => r.runId),
    );
    const decided = approval.state !== "pending" && approval.state !== "cancelled";
    if (holders.size > 1)
      violate(
        "approval-decided-once",
        approval.id,
        `decided in ${holders.size} runs: ${[...holders].join(", ")}`,
      );
    if (decided && (!approval.successorRunId || !holders.has(approval.successorRunId)))
      violate(
        "approval-decided-once",
        approval.id,
        `${approval.state}, but its successor ${approval.successorRunId ?? "(none)"} does not hold the decision`,
      );
    if (!decided && holders.size > 0)
      violate("approval-decided-once", approval.id, `${approval.state}, yet a run holds a decision`);
    const successor = approval.successorRunId ? runsById.get(approval.successorRunId) : undefined;
    const id = idsIn(approval.input)[0];
    if (id && successor?.answerText.includes(`appended "${id}"`) && linesOf(snapshot.toolEffects, id) === 0)
      violate("tool-effect-once", approval.id, `its answer reports the effect of ${id}, which is not there`);
  }
}

/**
 * `/forget confirm` purged the conversation of every `purged` input: a tombstone committed after
 * the command was posted; no run holds the input any more (a kill and a redelivered update must
 * not bring it back); no model request after the purge showed it; no table but the tombstones
 * names the conversation, and its outbox records kept no text.
 */
/**
 * A model call sent just before the purge (the interrupted run's) may be read by the fake model a
 * little after the purge committed on a loaded machine; later than this it was sent after it.
 */
const IN_FLIGHT_GRACE_MS = 1_000;

function checkPurged(snapshot: Snapshot, runsHolding: Map<string, RunRow[]>, violate: Violate): void {
  const tombstones = [...snapshot.tombstones].sort((a, b) => a.purgedAtMs - b.purgedAtMs);
  for (const input of snapshot.sent) {
    if (input.expect !== "purged") continue;
    const purge = tombstones.find((t) => t.purgedAtMs >= (input.forgetAtMs ?? 0));
    if (!purge) {
      violate("purged-stays-gone", input.id, "its /forget confirm never purged a conversation");
      continue;
    }
    const holders = runsHolding.get(input.id) ?? [];
    if (holders.length > 0)
      violate("purged-stays-gone", input.id, `reappeared in run ${holders.map((r) => r.id).join(", ")}`);
    const shownAfter = snapshot.modelRequestLog.filter(
      (r) => r.atMs > purge.purgedAtMs + IN_FLIGHT_GRACE_MS && r.text.includes(input.id),
    ).length;
    if (shownAfter > 0)
      violate("purged-stays-gone", input.id, `shown to the model ${shownAfter} times after the purge`);
  }
  const purged = new Set(snapshot.tombstones.map((t) => t.conversationId));
  for (const leftover of snapshot.purgeLeftovers) {
    if (leftover.rows > 0)
      violate(
        "purged-stays-gone",
        leftover.conversationId,
        `${leftover.rows} rows left in ${leftover.table} after the purge`,
      );
  }
  for (const record of snapshot.outbox) {
    if (record.conversationId && purged.has(record.conversationId) && record.markdown !== "")
      violate("purged-stays-gone", record.id, "an outbox record of a purged conversation kept its text");
  }
}

/**
 * Pairing under replays and kills: the user's one message before approval issued one code (a
 * duplicate or replay of it issues none), the first approval granted access once, and every
 * later redemption of the same code changed nothing ("already approved").
 */
function checkPairings(snapshot: Snapshot, violate: Violate): void {
  for (const pairing of snapshot.pairings) {
    if (pairing.codesIssued > 1)
      violate("pairing-once", pairing.user, `${pairing.codesIssued} codes issued for one message`);
    if (new Set(pairing.codesShown).size > 1)
      violate("pairing-once", pairing.user, `shown codes ${[...new Set(pairing.codesShown)].join(", ")}`);
    // "unknown": the gateway died during that call, which may or may not have approved.
    const answered = pairing.redemptions.filter((r) => r !== "unknown");
    const firstMayHaveCommitted = pairing.redemptions[0] === "unknown";
    if (answered[0] !== "approved" && !(firstMayHaveCommitted && answered[0] === "already approved"))
      violate("pairing-once", pairing.user, `the first approval answered ${answered[0] ?? "nothing"}`);
    if (answered.slice(1).some((r) => r !== "already approved"))
      violate("pairing-once", pairing.user, `a second redemption answered ${answered.slice(1).join(", ")}`);
    if (pairing.grants !== 1) violate("pairing-once", pairing.user, `${pairing.grants} grants`);
  }
}

/**
 * A photo or voice note answered by the model was fetched (its file downloaded to the end) and
 * shown: an image part, or the transcript. Answered once is delivered-once's part.
 */
function checkMedia(snapshot: Snapshot, runsHolding: Map<string, RunRow[]>, violate: Violate): void {
  for (const media of snapshot.media) {
    const answered = (runsHolding.get(media.id) ?? []).some(
      (r) => r.state === "completed" && r.answerText.includes(`a-${media.id}`),
    );
    if (!answered) continue; // superseded or absorbed: the other invariants account for it
    if (media.downloadsCompleted < 1)
      violate("media-fetched", media.id, `answered, but its ${media.kind} was never downloaded`);
    if (!media.modelSawIt)
      violate(
        "media-fetched",
        media.id,
        `answered, but the model never got its ${media.kind === "photo" ? "image" : "transcript"}`,
      );
  }
}

/**
 * WhatsApp reports every message it accepted (status webhooks, redelivered until answered), so a
 * record whose last chunk WhatsApp accepted ends delivered, and was not ambiguous after that: a
 * death or a lost answer mid-send is settled by the status, with no operator. (A send that never
 * reached WhatsApp gets no status and may become ambiguous; the operator's retry is then accepted.)
 */
function checkStatusSettles(snapshot: Snapshot, violate: Violate): void {
  const firstAccepted = new Map<string, number>();
  for (const { callbackData, atMs } of snapshot.whatsappAccepted)
    firstAccepted.set(callbackData, Math.min(atMs, firstAccepted.get(callbackData) ?? atMs));
  for (const record of snapshot.outbox) {
    if (record.channel !== "whatsapp" || record.kind !== "message") continue;
    const acceptedAtMs = firstAccepted.get(`${record.key}#${record.chunks - 1}`);
    if (acceptedAtMs === undefined) continue;
    const where = `${record.id} (${record.key}) in ${record.chat}`;
    if (record.state !== "delivered")
      violate("status-settles", where, `WhatsApp accepted its last message, yet it is ${record.state}`);
    if (record.firstAmbiguousAtMs !== null && record.firstAmbiguousAtMs >= acceptedAtMs)
      violate(
        "status-settles",
        where,
        "WhatsApp accepted it and reported its status, yet it became ambiguous (the status did not settle it)",
      );
  }
}

/**
 * A Matrix send is idempotent per access token and txnId, and the txnId comes from the record and
 * chunk: a send whose outcome a death, a reset or a 5xx left unknown is sent again with the same
 * txnId, never left ambiguous. So a Matrix record is never ambiguous; a delivered one names, chunk
 * by chunk, the very event its transaction made (a retry under a new txnId would name a second
 * one); and its answer is in the room exactly once.
 */
function checkMatrixOnce(snapshot: Snapshot, violate: Violate): void {
  const eventOfTxn = new Map(snapshot.matrixTxns.map((t) => [t.txnId, t.eventId]));
  for (const record of snapshot.outbox) {
    if (record.channel !== "matrix" || record.kind !== "message") continue;
    const where = `${record.id} (${record.key}) in ${record.chat}`;
    if (record.everAmbiguous || record.state === "ambiguous")
      violate(
        "matrix-once",
        where,
        `became ambiguous (now ${record.state}): a Matrix send is retried by its txnId`,
      );
    if (record.state === "delivered") {
      const made = Array.from({ length: record.chunks }, (_, chunk) =>
        eventOfTxn.get(txnIdFor(`${record.key}#${chunk}`)),
      );
      if (made.some((eventId) => eventId === undefined) || made.join(",") !== record.receiptIds.join(","))
        violate(
          "matrix-once",
          where,
          `delivered with events ${record.receiptIds.join(", ") || "(none)"}, but its transactions made ${made.map((e) => e ?? "nothing").join(", ")}`,
        );
    }
    const marker = ANSWER_MARKER.exec(record.markdown)?.[0];
    if (!marker || record.state !== "delivered") continue;
    const shown = countIn(snapshot.botMessages[record.chat] ?? [], marker);
    if (shown !== 1)
      violate("matrix-once", where, `delivered, and its answer ${marker} is in the room ${shown} times`);
  }
}

/**
 * One child per spawn call, one result per child: a `child_agents` row per (parent run, tool call)
 * and exactly one per spawning message; at most one input keyed `child-result:<handle>` per child,
 * exactly one for a delivered child, none for a cancelled one; every child settled; and a delivered
 * child's result answered once in its chat (its answer marked `a-y…`).
 */
function checkChildren(snapshot: Snapshot, runsById: Map<string, RunRow>, violate: Violate): void {
  const perCall = new Map<string, number>();
  for (const child of snapshot.children) {
    const key = `${child.parentRunId}|${child.toolCallId}`;
    perCall.set(key, (perCall.get(key) ?? 0) + 1);
  }
  for (const [key, count] of perCall)
    if (count > 1) violate("child-once", key, `${count} children for one spawn call`);
  const resultKeys = new Map<string, number>();
  for (const key of snapshot.childResultKeys) resultKeys.set(key, (resultKeys.get(key) ?? 0) + 1);
  for (const child of snapshot.children) {
    const results = resultKeys.get(`child-result:${child.handle}`) ?? 0;
    if (child.state === "running") violate("child-once", child.handle, "still running after the run settled");
    if (child.state === "delivered" && results !== 1)
      violate("child-once", child.handle, `delivered with ${results} result inputs`);
    if (child.state === "cancelled" && results !== 0)
      violate("child-once", child.handle, `cancelled, but ${results} result inputs were admitted`);
  }
  for (const spawn of snapshot.spawns) {
    const children = snapshot.children.filter((c) => idsIn(c.task).includes(spawn.childId));
    if (children.length !== 1) {
      violate("child-once", spawn.id, `${children.length} children for its spawn call`);
      continue;
    }
    const child = children[0]!;
    if (child.state !== "delivered") continue;
    const resultRun = child.resultRunId ? runsById.get(child.resultRunId) : undefined;
    if (!resultRun) {
      violate("child-once", spawn.id, `child ${child.handle} delivered, but its result's run is missing`);
      continue;
    }
    // An ambiguous record may be absent from the chat; a delivered one is there exactly once.
    const delivered = snapshot.outbox.some((r) => r.runId === resultRun.id && r.state === "delivered");
    const shown = countIn(snapshot.botMessages[spawn.chat] ?? [], answerMarker(spawn.resultId));
    if (shown > 1 || (delivered && shown !== 1))
      violate("child-once", spawn.id, `the answer to child ${child.handle}'s result is shown ${shown} times`);
  }
}

/**
 * One run per conversation API key: every request of a message (the first and each repeat) was
 * answered with the same run, and that run alone holds its input; a proactive send's requests all
 * name one outbox record, which exists (delivered-once checks it is shown once, or ambiguous).
 * No request may end in a client error or go unanswered through the restarts.
 */
function checkApi(snapshot: Snapshot, runsHolding: Map<string, RunRow[]>, violate: Violate): void {
  for (const call of snapshot.api) {
    for (const error of call.errors) violate("api-once", call.id, `a request was answered ${error}`);
    if (call.answers.length === 0) {
      if (call.errors.length === 0) violate("api-once", call.id, "no request was ever answered");
      continue;
    }
    if (call.kind === "message") {
      const runIds = new Set(call.answers.map((a) => a.runId));
      const holders = runsHolding.get(call.id) ?? [];
      if (runIds.size !== 1)
        violate("api-once", call.id, `its requests were answered with runs ${[...runIds].join(", ")}`);
      if (holders.length !== 1 || !runIds.has(holders[0]!.id))
        violate(
          "api-once",
          call.id,
          `held by runs ${holders.map((r) => r.id).join(", ") || "none"}, answered ${[...runIds].join(", ")}`,
        );
      continue;
    }
    const outboxIds = new Set(call.answers.map((a) => a.outboxId));
    const [outboxId] = outboxIds;
    if (outboxIds.size !== 1)
      violate("api-once", call.id, `its requests named outbox records ${[...outboxIds].join(", ")}`);
    else if (!snapshot.outbox.some((r) => r.id === outboxId))
      violate("api-once", call.id, `its outbox record ${outboxId} is missing`);
  }
}

/**
 * A message edited while queued is answered once, as corrected: its corrected text's answer is in
 * the chat once and the first text's never, and no run holding the first text completed; one
 * edited at a random moment is answered at least once and each text at most once. A message
 * deleted while queued is never answered: no answer in the chat, no model call, no completed run.
 */
function checkEditsAndDeletes(
  snapshot: Snapshot,
  runsHolding: Map<string, RunRow[]>,
  violate: Violate,
): void {
  const completedHolding = (id: string) =>
    (runsHolding.get(id) ?? []).filter((r) => r.state === "completed").map((r) => r.id);
  for (const input of snapshot.sent) {
    const messages = snapshot.botMessages[input.chat] ?? [];
    if (input.expect === "edited" && input.correctedTo && input.editedAnyTime) {
      // Queued: the correction alone; running: both (queue policy); answered: the first alone.
      const first = countIn(messages, answerMarker(input.id));
      const corrected = countIn(messages, answerMarker(input.correctedTo));
      if (first > 1 || corrected > 1 || first + corrected === 0)
        violate(
          "edit-once",
          input.id,
          `answered ${first} times as first written and ${corrected} times as corrected (${input.correctedTo})`,
        );
    } else if (input.expect === "edited" && input.correctedTo) {
      const first = countIn(messages, answerMarker(input.id));
      const corrected = countIn(messages, answerMarker(input.correctedTo));
      if (first !== 0 || corrected !== 1)
        violate(
          "edit-once",
          input.id,
          `answered ${first} times as first written and ${corrected} times as corrected (${input.correctedTo})`,
        );
      const stale = completedHolding(input.id);
      if (stale.length > 0) violate("edit-once", input.id, `its first text completed in ${stale.join(", ")}`);
    }
    if (input.expect === "withdrawn") {
      const shown = countIn(Object.values(snapshot.botMessages).flat(), answerMarker(input.id));
      const calls = snapshot.modelRequests.filter((text) => idsIn(text).at(-1) === input.id).length;
      const completed = completedHolding(input.id);
      if (shown > 0 || calls > 0 || completed.length > 0)
        violate(
          "deleted-unanswered",
          input.id,
          `deleted while queued, yet shown ${shown} times, ${calls} model calls, completed in ${completed.join(", ") || "no run"}`,
        );
    }
  }
}

/**
 * Every delivery leaves through the account that received its input, and no bot writes where it
 * is not a member. The ids an input brings (its own, its correction's, its spawned child's task
 * and answer; an api send's, through the account it named) belong to that input's account and
 * chat. Then: an outbox record naming one is sent through that account; a bot message naming one
 * was sent by that bot, into that chat; and every bot message is in a chat of the bot's own.
 */
function checkSameAccount(snapshot: Snapshot, violate: Violate): InvariantReport["accountTied"] {
  const tied = { records: 0, messages: 0 };
  const owner = new Map<string, { account: string; chatId: string; channel: string }>();
  const chatIdOf = (chat: string) => chat.split(":")[1] ?? chat;
  for (const input of snapshot.sent) {
    if (input.account === undefined) continue;
    const of = { account: input.account, chatId: chatIdOf(input.chat), channel: input.channel };
    owner.set(input.id, of);
    if (input.correctedTo) owner.set(input.correctedTo, of);
    const spawn = snapshot.spawns.find((sp) => sp.id === input.id);
    if (spawn) {
      owner.set(spawn.childId, of);
      owner.set(spawn.resultId, of);
    }
  }
  for (const call of snapshot.api) {
    const account = call.body?.account;
    if (call.kind === "send" && typeof account === "string" && call.chat)
      owner.set(call.id, { account, chatId: chatIdOf(call.chat), channel: String(call.body?.channel) });
  }
  const ownersIn = (text: string) =>
    [...new Set(idsIn(text))].flatMap((id) => {
      const of = owner.get(id);
      return of ? [{ id, ...of }] : [];
    });
  for (const record of snapshot.outbox) {
    if (record.account === undefined) continue;
    const owners = ownersIn(record.markdown);
    if (owners.length > 0) tied.records += 1;
    for (const of of owners) {
      if (record.channel === of.channel && record.account === of.account) continue;
      violate(
        "same-account",
        `${record.id} (${record.key})`,
        `names ${of.id}, received by ${of.channel} account ${of.account}, but is sent through ${record.channel} account ${record.account}`,
      );
    }
  }
  const members = new Map(
    snapshot.accountChats.map((a) => [
      `${a.channel}:${a.account}`,
      { name: a.name, chats: new Set(a.chatIds) },
    ]),
  );
  for (const message of snapshot.botSends) {
    const where = `${message.channel} message ${message.messageId} in chat ${message.chatId}`;
    const owners = ownersIn(message.text);
    if (owners.length > 0) tied.messages += 1;
    for (const of of owners) {
      if (message.channel === of.channel && message.account === of.account && message.chatId === of.chatId)
        continue;
      violate(
        "same-account",
        where,
        `sent by account ${message.account}, names ${of.id}, which account ${of.account} received in chat ${of.chatId}`,
      );
    }
    const membership = members.get(`${message.channel}:${message.account}`);
    if (!membership)
      violate("same-account", where, `sent by account ${message.account}, which the gateway has no bot for`);
    else if (!membership.chats.has(message.chatId))
      violate(
        "same-account",
        where,
        `sent by account ${membership.name} (${message.account}), which is not a member of that chat`,
      );
  }
  return tied;
}

/**
 * No lease held by a dead process past its expiry: once the run settled, an ended run names no
 * owner; a run or schedule occurrence still leased is held by a live owner that renews it, so its
 * lease has not expired (an expired one is a dead owner's that nobody took over); and on
 * PostgreSQL at most one session, the active gateway's, holds the gateway lock.
 */
export function checkLeases(leases: LeaseSnapshot, violate: Violate): void {
  for (const row of leases.rows) {
    const where = `${row.table} ${row.id}`;
    const ended = row.table === "runs" ? isTerminalState(row.state as RunState) : row.state !== "claimed";
    if (ended) {
      violate("lease-expired", where, `${row.state}, yet still leased to ${row.owner}`);
      continue;
    }
    if (row.expiresAtMs === null || row.expiresAtMs < leases.readAtMs)
      violate(
        "lease-expired",
        where,
        `${row.state} and held by ${row.owner} ${
          row.expiresAtMs === null
            ? "with no expiry"
            : `${leases.readAtMs - row.expiresAtMs} ms past its lease's expiry`
        }: nobody took it over`,
      );
  }
  if (leases.gatewayLockHolders.length > 1)
    violate(
      "lease-expired",
      "gateway lock",
      `held by ${leases.gatewayLockHolders.length} sessions (${leases.gatewayLockHolders.join(", ")}): a dead gateway's session still holds it`,
    );
}
