/**
 * The two ways a run's life is decided from outside its step loop, written once for both engines
 * (see steps.ts): the terminal commit (T2) and a stop request. Each engine supplies the steps as
 * its own SQL inside one transaction.
 */
import type {
  AnswerDelivery,
  ApprovalRequestInsert,
  Fence,
  RunRecord,
  StopRequestResult,
  TerminalRequest,
  TerminalResult,
} from "../runtime/store.ts";
import type { Message, MessagePart, MessageStatus, StopReason, TerminalRunState } from "../runtime/types.ts";
import {
  absorbedRuns,
  answerStatus,
  type EventBody,
  mayAbsorb,
  stopDecision,
  terminalEvent,
} from "./rules.ts";
import { type StepSaveSteps, saveStep } from "./run-writes.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/**
 * The reads and writes of a terminal commit, each inside the committing transaction. The step
 * that ended the run is saved as a checkpoint saves one ({@link saveStep}).
 */
export interface TerminalSteps extends StepSaveSteps {
  /** The run, when `fence` still holds it; throws `fence_lost` otherwise. */
  fenced(fence: Fence): RunRecord;
  /** Writes the run's answer message, or replaces the one a stream started. */
  upsertAnswer(run: RunRecord, parts: readonly MessagePart[], status: MessageStatus, nowMs: number): Message;
  /** Ends the run in `state`, releasing its owner and lease; answers the row as it now is. */
  finishRun(run: RunRecord, state: TerminalRunState, error: string | null, nowMs: number): RunRecord;
  activeRuns(conversationId: string): RunRecord[];
  /** Ends a run without its owner (run-writes.ts, endWithoutOwner); returns its event's seq. */
  endRun(run: RunRecord, state: TerminalRunState, nowMs: number, absorbedInto?: string): number;
  insertApproval(run: RunRecord, approval: ApprovalRequestInsert, nowMs: number): void;
  /** The run's outbox record (or the end of the stream record it already has). */
  writeDelivery(delivery: AnswerDelivery, nowMs: number): void;
  appendEvent(body: EventBody, nowMs: number): { seq: number };
}

/** The reads and writes of a stop request, each inside one transaction. */
export interface StopSteps {
  /** The run, locked for this transaction (PostgreSQL); null when there is none. */
  lockRun(runId: string): RunRecord | null;
  endRun(run: RunRecord, state: TerminalRunState, nowMs: number): number;
  /** Marks a running run `interrupt_requested` for `reason`: its owner stops after its step. */
  markInterruptRequested(runId: string, reason: StopReason): void;
  /** Records why a run that never started was stopped (its `stop_reason`), before it ends. */
  recordStopReason(runId: string, reason: StopReason): void;
  appendEvent(body: EventBody, nowMs: number): { seq: number };
}

const terminalStep = stepsOf<TerminalSteps>();
const stopStep = stepsOf<StopSteps>();
type T<K extends keyof TerminalSteps> = Answer<TerminalSteps, K>;

/**
 * T2: the run's final state, its answer, the runs its answer absorbed, the approvals it waits for
 * and its delivery, in this order, so a reader of any one of them finds the others committed.
 */
export function* terminal(
  request: TerminalRequest,
): Generator<StepCall<TerminalSteps>, TerminalResult, unknown> {
  const { nowMs, state, assistantParts } = request;
  const run = (yield terminalStep("fenced", request.fence)) as T<"fenced">;
  if (request.finalStep) {
    yield* saveStep(run, request.finalStep.step, request.finalStep.parts, nowMs);
  }
  const answer = (yield terminalStep(
    "upsertAnswer",
    run,
    assistantParts,
    answerStatus(state),
    nowMs,
  )) as T<"upsertAnswer">;
  const finalRun = (yield terminalStep(
    "finishRun",
    run,
    state,
    request.error ?? null,
    nowMs,
  )) as T<"finishRun">;
  const absorbed = absorbedRuns(
    state,
    assistantParts,
    mayAbsorb(state, assistantParts)
      ? ((yield terminalStep("activeRuns", run.conversationId)) as T<"activeRuns">)
      : [],
  );
  for (const candidate of absorbed) yield terminalStep("endRun", candidate, "absorbed", nowMs, run.id);
  for (const approval of request.approvals ?? []) yield terminalStep("insertApproval", run, approval, nowMs);
  if (request.delivery) yield terminalStep("writeDelivery", request.delivery, nowMs);
  const event = terminalEvent(run, state, assistantParts, {
    usage: finalRun.usage,
    ...(request.error ? { error: request.error } : {}),
  });
  const { seq } = (yield terminalStep("appendEvent", event, nowMs)) as T<"appendEvent">;
  return { seq, run: finalRun, answer, absorbed: absorbed.map((r) => r.id) };
}

/**
 * A stop request: a run that has not started ends at once (its stop reason recorded); a running
 * one is asked to stop after its step (announced every time it is asked, marked once).
 */
export function* stop(
  runId: string,
  reason: StopReason,
  nowMs: number,
): Generator<StepCall<StopSteps>, StopRequestResult, unknown> {
  const run = (yield stopStep("lockRun", runId)) as Answer<StopSteps, "lockRun">;
  const decision = stopDecision(run, reason);
  if (!run || decision.kind === "not_active") return { outcome: "not_active" };
  if (decision.kind === "end") {
    yield stopStep("recordStopReason", runId, reason);
    const seq = (yield stopStep("endRun", run, decision.state, nowMs)) as Answer<StopSteps, "endRun">;
    return { outcome: "ended", seq };
  }
  if (decision.mark) yield stopStep("markInterruptRequested", runId, reason);
  const body: EventBody = {
    type: "run-state",
    conversationId: run.conversationId,
    runId,
    state: "interrupt_requested",
  };
  const { seq } = (yield stopStep("appendEvent", body, nowMs)) as Answer<StopSteps, "appendEvent">;
  return { outcome: "requested", seq };
}
