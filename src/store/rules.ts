import { SwitchboardError } from "../errors.ts";
import type { MessageStatus, TerminalRunState } from "../runtime/types.ts";
import type { AdmitRequest, Fence, RunRecord } from "./types.ts";

/** Rules every store backend applies the same way. */

/** Message status an assistant message takes when its run ends in `state`. */
export function answerStatus(state: TerminalRunState): MessageStatus {
  switch (state) {
    case "completed":
      return "complete";
    case "superseded":
      return "superseded";
    case "failed":
      return "failed";
    default:
      return "interrupted";
  }
}

/** A run some worker holds: running, or asked to stop and not yet stopped. */
export function isOwned(run: RunRecord): boolean {
  return run.state === "running" || run.state === "interrupt_requested";
}

/** Returns `run` if it is still owned under the fence's token; throws `fence_lost` otherwise. */
export function checkFence(run: RunRecord | null, fence: Fence): RunRecord {
  if (!run || run.fencingToken !== fence.fencingToken || !isOwned(run)) {
    throw new SwitchboardError(
      "fence_lost",
      `Run ${fence.runId} is no longer owned under fencing token ${fence.fencingToken}; its writes are refused.`,
      { details: { state: run?.state, currentToken: run?.fencingToken } },
    );
  }
  return run;
}

/**
 * The queued run a coalescing admission joins instead of queueing its own: an ordinary run that
 * has not started, among the conversation's `active` runs (minus those this admission just
 * superseded). None for urgent or superseding input, or when coalescing is off.
 */
export function coalescingTarget(
  active: readonly RunRecord[],
  request: Pick<AdmitRequest, "coalescePending" | "policy">,
  superseded: readonly string[],
): RunRecord | undefined {
  if (!request.coalescePending || request.policy === "interrupt-next" || request.policy === "supersede") {
    return undefined;
  }
  return active.find(
    (r) =>
      r.state === "queued" &&
      r.priority === "normal" &&
      r.policy !== "inject" &&
      r.steps === 0 &&
      r.startedAtMs === null &&
      !superseded.includes(r.id),
  );
}
