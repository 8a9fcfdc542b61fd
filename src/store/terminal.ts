/**
 * The terminal commit (T2), written once for both engines (see steps.ts); the stop request it
 * used to sit beside is stop.ts. Each engine supplies the steps as its own SQL inside one
 * transaction.
 */
import type {
  AnswerDelivery,
  ApprovalRequestInsert,
  Fence,
  RunRecord,
  TerminalRequest,
  TerminalResult,
} from "../runtime/store.ts";
import type { Message, MessagePart, MessageStatus, TerminalRunState } from "../runtime/types.ts";
import { type ChildProcedureSteps, childrenAtTerminal } from "./children.ts";
import { absorbedRuns, answerStatus, type EventBody, mayAbsorb, terminalEvent } from "./rules.ts";
import { type StepSaveSteps, saveStep } from "./run-writes.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/**
 * The reads and writes of a terminal commit, each inside the committing transaction. The step
 * that ended the run is saved as a checkpoint saves one ({@link saveStep}).
 */
export interface TerminalSteps extends StepSaveSteps, ChildProcedureSteps {
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

export { type StopSteps, stop } from "./stop.ts";

const terminalStep = stepsOf<TerminalSteps>();
type T<K extends keyof TerminalSteps> = Answer<TerminalSteps, K>;

/**
 * T2: the run's final state, its answer, the runs its answer absorbed, the approvals it waits for
 * and its delivery, in this order, so a reader of any one of them finds the others committed; then
 * its children's part (children.ts): a child's result admitted to its parent, or the run's running
 * children stopped.
 */
export function* terminal(
  request: TerminalRequest,
): Generator<StepCall<TerminalSteps>, TerminalResult, unknown> {
  const { nowMs, state, assistantParts } = request;
  yield terminalStep("lockParentOf", request.fence.runId);
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
  const children = yield* childrenAtTerminal(run, state, assistantParts, request.error ?? null, nowMs);
  return { seq, run: finalRun, answer, absorbed: absorbed.map((r) => r.id), ...children };
}
