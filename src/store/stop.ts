/**
 * A stop request, written once for both engines (see steps.ts): asked from outside a run's step
 * loop (/stop, a newer input, a parent stopping its children).
 */
import type { RunRecord, StopRequestResult } from "../runtime/store.ts";
import type { StopReason, TerminalRunState } from "../runtime/types.ts";
import { type EventBody, stopDecision } from "./rules.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

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

const stopStep = stepsOf<StopSteps>();

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
