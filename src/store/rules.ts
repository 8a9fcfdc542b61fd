import { SwitchboardError } from "../errors.ts";
import type { AdmitRequest, Fence, PromptTurn, RunRecord } from "../runtime/store.ts";
import type {
  Message,
  MessagePart,
  MessageStatus,
  RunState,
  StopReason,
  TerminalRunState,
} from "../runtime/types.ts";

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

/** What an admission under `policy` asks of the runs already active; null: nothing (queue, inject). */
export function stopReasonFor(policy: AdmitRequest["policy"]): StopReason | null {
  if (policy === "supersede") return "superseded";
  if (policy === "interrupt" || policy === "interrupt-next") return "interrupted";
  return null;
}

export function idempotencyConflict(idempotencyKey: string, conversationId: string): SwitchboardError {
  return new SwitchboardError(
    "idempotency_conflict",
    `Idempotency key ${idempotencyKey} was already used with different input in conversation ${conversationId}. Use a new key for new input.`,
  );
}

/** Ids of the inputs that joined an answer, from its `joined-input` parts. */
export function joinedInputIds(parts: readonly MessagePart[]): string[] {
  return parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : []));
}

/**
 * Prompt turns of finished `runs`, in their order: each run's inputs, its answer, then the inputs
 * that joined the answer. `messages` are the runs' own messages, `joined` those joined inputs.
 */
export function promptTurns(
  runs: ReadonlyArray<{ id: string; state: string; finishSeq: number }>,
  messages: readonly Message[],
  joined: readonly Message[],
): PromptTurn[] {
  return runs.map((run) => {
    const own = messages.filter((m) => m.runId === run.id);
    const answer = own.find((m) => m.role === "assistant");
    const joinedIds = new Set(answer ? joinedInputIds(answer.parts) : []);
    const joinedOfTurn = joined.filter((m) => joinedIds.has(m.id));
    return {
      runId: run.id,
      state: run.state as RunState,
      finishSeq: run.finishSeq,
      messages: [...own.filter((m) => m.role === "user"), ...(answer ? [answer] : []), ...joinedOfTurn],
    };
  });
}
