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
import { finalAnswerMarkdown } from "../../outbox/final-text.ts";
import { isTerminalState, type RunState, type TerminalRunState } from "../../src/runtime/types.ts";
import { type ChatMessage, idsIn, type OutboxRow, type RunRow, type Snapshot } from "./snapshot.ts";

export type InvariantName =
  | "admitted"
  | "one-terminal-run"
  | "delivered-once"
  | "superseded-silent"
  | "model-calls"
  | "schedule-fired-once"
  | "order"
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
  /** Runs an owner acquired more than once (resumed after a kill). */
  resumedRuns: number;
  /** Model calls that resumed a run (calls beyond the first per run). */
  repeatedModelCalls: number;
}

const answerMarker = (id: string) => `a-${id}`;
const ANSWER_MARKER = /\ba-([qs]\d{5})\b/;

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
  if (snapshot.unconfirmedUpdates.length > 0) {
    violate("settled", "telegram", `updates never confirmed: ${snapshot.unconfirmedUpdates.join(", ")}`);
  }
  return {
    violations,
    ambiguousRecords: snapshot.outbox.filter((r) => r.everAmbiguous).length,
    resumedRuns: snapshot.runs.filter((r) => r.acquisitions > 1).length,
    repeatedModelCalls: calls,
  };
}

type Violate = (invariant: InvariantName, subject: string, detail: string) => void;

/** Every message that must be answered was admitted; every ignorable one never reached the model. */
function checkAdmitted(snapshot: Snapshot, violate: Violate): void {
  const receipts = new Map(snapshot.receipts.map((r) => [`${r.channel}:${r.key}`, r]));
  for (const input of snapshot.sent) {
    const receipt = receipts.get(`${input.channel}:${input.updateKey}`);
    if (input.expect === "answer" && !receipt?.runId) {
      violate("admitted", input.id, `${input.place} update ${input.updateKey} was never admitted as a run`);
    }
    if (input.expect === "schedule" && !receipt?.outcome.startsWith("command:")) {
      violate("admitted", input.id, `the /in command (${input.place}) left no command receipt`);
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
  const receipts = new Map(snapshot.receipts.map((r) => [`${r.channel}:${r.key}`, r]));
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
      const receipt = receipts.get(`${input.channel}:${input.updateKey}`);
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
  for (const record of snapshot.outbox) {
    recordsByRun.set(record.runId, [...(recordsByRun.get(record.runId) ?? []), record]);
    const fingerprint = fingerprintOf(record.markdown);
    if (fingerprint)
      fingerprints.set(
        `${record.chat}|${fingerprint}`,
        (fingerprints.get(`${record.chat}|${fingerprint}`) ?? 0) + 1,
      );
  }
  for (const record of snapshot.outbox) {
    const run = runsById.get(record.runId);
    if (run?.state === "superseded" || run?.state === "absorbed") continue; // superseded-silent checks those
    const messages = snapshot.botMessages[record.chat] ?? [];
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
  for (const run of snapshot.runs) {
    if (!isTerminalState(run.state as RunState)) continue;
    const records = recordsByRun.get(run.id) ?? [];
    if (records.length > 1) violate("delivered-once", run.id, `has ${records.length} outbox records`);
    const expected = finalAnswerMarkdown(run.state as TerminalRunState, run.answerText);
    if (expected.trim() !== "" && records.length === 0) {
      violate("delivered-once", run.id, `ended ${run.state} with an answer but has no outbox record`);
    }
  }
  return shown;
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

/** Returns how many calls resumed a run (beyond each run's first). */
function checkModelCalls(snapshot: Snapshot, runsHolding: Map<string, RunRow[]>, violate: Violate): number {
  const calls = new Map<string, number>();
  snapshot.modelRequests.forEach((text, index) => {
    const id = idsIn(text).at(-1);
    const run = id === undefined ? undefined : runsHolding.get(id)?.[0];
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
  let repeated = 0;
  for (const run of snapshot.runs) {
    const made = calls.get(run.id) ?? 0;
    repeated += Math.max(0, made - 1);
    if (made > run.acquisitions) {
      violate(
        "model-calls",
        run.id,
        `${made} model calls but only ${run.acquisitions} acquisitions: a duplicate or replay reached the model`,
      );
    }
    if (run.state === "completed" && ANSWER_MARKER.test(run.answerText) && made === 0) {
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
