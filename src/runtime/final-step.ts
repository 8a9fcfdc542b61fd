import type { StepRecord } from "./types.ts";

/**
 * Whether a model step ends the answer: every finish but `tool-calls` (a stop, the length limit,
 * a content filter, anything else) leaves the model nothing to be called back for.
 */
export function endsAnswer(finishReason: string): boolean {
  return finishReason !== "tool-calls";
}

/**
 * Whether the run's answer was complete when it was last saved: its last step record (the one
 * counted last, `steps - 1`) ended the answer. Decided from the stored finish reason, as the live
 * loop decides right after that step, never from what the parts look like: a step may end in
 * text and still call tools, or end at the length limit in reasoning.
 */
export function answeredBeforeCrash(
  run: { steps: number },
  lastStep: Pick<StepRecord, "step" | "finishReason"> | null,
): boolean {
  return lastStep !== null && lastStep.step === run.steps - 1 && endsAnswer(lastStep.finishReason);
}
