import { SwitchboardError } from "../errors.ts";
import type { DurableEvent, ToolTrace } from "../runtime/events.ts";
import {
  type AdmitRequest,
  type AdmitResult,
  type ApprovalDecision,
  type CompactionRead,
  type ConversationSettings,
  type Fence,
  type PromptTurn,
  type PurgeResult,
  purgedUpdateError,
  type RunRecord,
  refusedUpdateError,
} from "../runtime/store.ts";
import {
  answerText,
  type Message,
  type MessagePart,
  type MessageStatus,
  type RunState,
  type StepRecord,
  type StopReason,
  type TerminalRunState,
  type Usage,
} from "../runtime/types.ts";

/**
 * The runtime store's decisions, which every backend applies the same way. Engines read rows, ask
 * these functions what to do, and write what they answer: nothing here touches a database.
 */

/** A durable event before the store gives it its place (`seq`) in the conversation's ledger. */
export type EventBody = DurableEvent extends infer E
  ? E extends DurableEvent
    ? Omit<E, "seq" | "durable">
    : never
  : never;

// ---- run states and fencing ----

/** Message status an assistant message takes when its run ends in `state`. */
export function answerStatus(state: TerminalRunState): MessageStatus {
  switch (state) {
    case "completed":
    case "awaiting_approval":
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

/** An owned run whose owner's lease has not run out at `nowMs`. */
export function isLeaseLive(run: RunRecord, nowMs: number): boolean {
  return isOwned(run) && (run.leaseExpiresAtMs ?? 0) > nowMs;
}

/**
 * Returns `run` if it is still owned under the fence's token; throws `fence_lost` otherwise. A
 * run already terminal is not owned, so of two terminal commits racing on one fence the second
 * is refused here.
 */
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

/** A write to a conversation that was purged (its tombstone stays). */
export function purgedError(conversationId: string): SwitchboardError {
  return new SwitchboardError(
    "conversation_purged",
    `Conversation ${conversationId} was purged; start a new conversation instead.`,
  );
}

/** The refusal of a prepared-input save for a message that is not one of the run's inputs. */
export function notAnInput(messageId: string, runId: string): SwitchboardError {
  return new SwitchboardError(
    "not_found",
    `Message ${messageId} is not an input of run ${runId}; nothing was saved.`,
    {
      details: { messageId, runId },
    },
  );
}

/**
 * Whether `run` may be acquired at `nowMs`, and as what. A queued run only while no other run of
 * its conversation (`active`, its queued and owned runs) is held under a live lease; an owned run
 * only once its lease expired (resumption, which keeps a pending stop request). Null: refuse.
 * The new owner's fencing token is always one more than the last.
 */
export function acquisition(
  run: RunRecord,
  active: readonly RunRecord[],
  nowMs: number,
): { state: "running" | "interrupt_requested"; fencingToken: number } | null {
  if (run.state === "queued") {
    if (active.some((r) => isLeaseLive(r, nowMs))) return null;
  } else if (!isOwned(run) || isLeaseLive(run, nowMs)) {
    return null;
  }
  return {
    state: run.state === "interrupt_requested" ? "interrupt_requested" : "running",
    fencingToken: run.fencingToken + 1,
  };
}

/**
 * The run a conversation executes next among its `active` runs (in durable order), or null. A
 * held run blocks the conversation until its lease expires, and is then resumed first; otherwise
 * urgent queued runs go first, then ordinary ones, each in durable order.
 */
export function nextRunnable(active: readonly RunRecord[], nowMs: number): RunRecord | null {
  const owned = active.find(isOwned);
  if (owned) return isLeaseLive(owned, nowMs) ? null : owned;
  return active.find((r) => r.priority === "urgent") ?? active[0] ?? null;
}

/** How many finished turns a compaction would fold, and how many of them to read (0: not due). */
export function compactionReach(
  finishedSinceSummary: number,
  options: CompactionRead,
): { pending: number; read: number } {
  const pending = Math.max(0, finishedSinceSummary - options.keepTurns);
  const due = pending > (options.minPending ?? 0);
  return { pending, read: due ? Math.min(pending, options.maxTurns) : 0 };
}

/** Until when a live lease of an owner other than `owner` holds the conversation, or null. */
export function foreignLeaseUntil(active: readonly RunRecord[], owner: string): number | null {
  return active.find((r) => r.leaseExpiresAtMs !== null && r.owner !== owner)?.leaseExpiresAtMs ?? null;
}

/** What a stop request does to `run`: end it now (never started), ask its owner, or nothing. */
export type StopDecision =
  | { kind: "end"; state: TerminalRunState }
  /** `mark`: the run is running and becomes `interrupt_requested`; a repeated request only announces. */
  | { kind: "request"; mark: boolean }
  | { kind: "not_active" };

export function stopDecision(run: RunRecord | null, reason: StopReason): StopDecision {
  if (!run) return { kind: "not_active" };
  if (run.state === "queued")
    return { kind: "end", state: reason === "superseded" ? "superseded" : "cancelled" };
  if (isOwned(run)) return { kind: "request", mark: run.state === "running" };
  return { kind: "not_active" };
}

/** The state a run given back on shutdown takes: running → queued; a stop request stays pending. */
export function releasedState(run: RunRecord): RunState {
  return run.state === "running" ? "queued" : run.state;
}

// ---- admission ----

export function idempotencyConflict(idempotencyKey: string, conversationId: string): SwitchboardError {
  return new SwitchboardError(
    "idempotency_conflict",
    `Idempotency key ${idempotencyKey} was already used with different input in conversation ${conversationId}. Use a new key for new input.`,
  );
}

type Duplicate = Omit<Extract<AdmitResult, { outcome: "duplicate" }>, "version">;

/**
 * The admission an ingress receipt records, or null when the identity led to no run. A receipt a
 * purge kept (`purged`) or a refusal wrote (`refused:…`) throws ({@link purgedUpdateError},
 * {@link refusedUpdateError}): its update is never admitted again.
 */
export function receiptDuplicate(
  receipt: {
    conversation_id: string | null;
    run_id: string | null;
    input_message_id: string | null;
    outcome: string;
  } | null,
  ingress: { source: string; key: string },
): Duplicate | null {
  if (receipt?.outcome === "purged") throw purgedUpdateError(ingress);
  if (receipt?.outcome.startsWith("refused:")) throw refusedUpdateError(ingress, receipt.outcome);
  if (!receipt?.run_id || !receipt.conversation_id || !receipt.input_message_id) return null;
  return {
    outcome: "duplicate",
    conversationId: receipt.conversation_id,
    runId: receipt.run_id,
    inputMessageId: receipt.input_message_id,
  };
}

/**
 * The admission this idempotency key already made in the conversation (`prior`, its input
 * message), or null for new input. Throws `idempotency_conflict` when the key came with other input.
 */
export function priorDuplicate(
  prior: { fingerprint: string; run_id: string; id: string } | null,
  request: Pick<AdmitRequest, "idempotencyKey" | "fingerprint">,
  conversationId: string,
): Duplicate | null {
  if (!prior) return null;
  if (prior.fingerprint !== request.fingerprint) {
    throw idempotencyConflict(request.idempotencyKey, conversationId);
  }
  return { outcome: "duplicate", conversationId, runId: prior.run_id, inputMessageId: prior.id };
}

/** Whether admission must read the conversation's active runs: queue-without-coalescing touches none. */
export function needsActiveRuns(request: Pick<AdmitRequest, "policy" | "coalescePending">): boolean {
  return request.policy !== "queue" || request.coalescePending;
}

/** What an admission under `policy` asks of the runs already active; null: nothing (queue, inject). */
export function stopReasonFor(policy: AdmitRequest["policy"]): StopReason | null {
  if (policy === "supersede") return "superseded";
  if (policy === "interrupt" || policy === "interrupt-next") return "interrupted";
  return null;
}

/**
 * What an admission does to one earlier active run, in durable order: end a queued run
 * `superseded`, or ask an owned run to stop (`announce`: it was running, so the ledger records
 * that it is now `interrupt_requested`). A run already asked to stop for being superseded keeps
 * that reason.
 */
export type PolicyEffect =
  | { kind: "supersede"; run: RunRecord }
  | { kind: "stop"; run: RunRecord; reason: StopReason; announce: boolean };

/** How an admission lands: the policy's effects on `active`, then the run its input joins or starts. */
export interface AdmissionPlan {
  effects: PolicyEffect[];
  /** The pending run the input joins (coalescing); null: the input starts a new run. */
  join: RunRecord | null;
  /** A new run's priority: interrupt-next input jumps the queue. */
  priority: "urgent" | "normal";
}

export function planAdmission(
  request: Pick<AdmitRequest, "policy" | "coalescePending">,
  active: readonly RunRecord[],
): AdmissionPlan {
  const effects: PolicyEffect[] = [];
  const stopReason = stopReasonFor(request.policy);
  if (stopReason) {
    for (const run of active) {
      if (run.state === "queued") {
        if (stopReason === "superseded") effects.push({ kind: "supersede", run });
        continue;
      }
      const reason = run.stopReason === "superseded" ? "superseded" : stopReason;
      effects.push({ kind: "stop", run, reason, announce: run.state === "running" });
    }
  }
  const superseded = effects.flatMap((e) => (e.kind === "supersede" ? [e.run.id] : []));
  return {
    effects,
    join: coalescingTarget(active, request, superseded) ?? null,
    priority: request.policy === "interrupt-next" ? "urgent" : "normal",
  };
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

/** The result of an admission that went through `plan`. */
export function admitted(
  plan: AdmissionPlan,
  landed: { conversationId: string; runId: string; inputMessageId: string; version: number; seq: number },
  cancelledApprovals: string[] = [],
): AdmitResult {
  return {
    outcome: plan.join ? "coalesced" : "admitted",
    ...landed,
    cancelledApprovals,
    stopRequested: plan.effects.flatMap((e) =>
      e.kind === "stop" ? [{ runId: e.run.id, reason: e.reason }] : [],
    ),
    superseded: plan.effects.flatMap((e) => (e.kind === "supersede" ? [e.run.id] : [])),
  };
}

// ---- the terminal commit ----

/** Ids of the inputs that joined an answer, from its `joined-input` parts. */
export function joinedInputIds(parts: readonly MessagePart[]): string[] {
  return parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : []));
}

/** Whether a run ending in `state` with answer `parts` can absorb any run (else skip reading them). */
export function mayAbsorb(state: TerminalRunState, parts: readonly MessagePart[]): boolean {
  return state === "completed" && parts.some((p) => p.type === "joined-input");
}

/**
 * The queued `inject` runs a run ending in `state` absorbs: only a completed answer absorbs, and
 * only runs whose every input joined it. The others' inputs are answered by their own runs.
 */
export function absorbedRuns(
  state: TerminalRunState,
  parts: readonly MessagePart[],
  active: readonly RunRecord[],
): RunRecord[] {
  if (state !== "completed") return [];
  const joined = new Set(joinedInputIds(parts));
  if (joined.size === 0) return [];
  return active.filter(
    (r) => r.state === "queued" && r.policy === "inject" && r.inputMessageIds.every((id) => joined.has(id)),
  );
}

/**
 * The tool calls of an answer so far, each with its outcome once its result is there: what the
 * ledger's `checkpoint` and `terminal` events carry (the conversation API streams them).
 */
export function toolTraces(parts: readonly MessagePart[]): ToolTrace[] {
  const outcomes = new Map<string, "ok" | "error">();
  for (const part of parts)
    if (part.type === "tool-result") outcomes.set(part.toolCallId, part.isError ? "error" : "ok");
  return parts.flatMap((part) => {
    if (part.type !== "tool-call") return [];
    const outcome = outcomes.get(part.toolCallId);
    return [
      {
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
        ...(outcome ? { outcome } : {}),
      },
    ];
  });
}

/** The ledger's `checkpoint` event of a completed step; `parts` is the answer so far. */
export function checkpointEvent(run: RunRecord, step: StepRecord, parts: readonly MessagePart[]): EventBody {
  const tools = toolTraces(parts);
  return {
    type: "checkpoint",
    conversationId: run.conversationId,
    runId: run.id,
    step: step.step,
    durationMs: step.finishedAtMs - step.startedAtMs,
    text: answerText(parts),
    ...(tools.length > 0 ? { tools } : {}),
  };
}

/** The ledger's `terminal` event of a run ending in `state` with answer `parts`. */
export function terminalEvent(
  run: RunRecord,
  state: TerminalRunState,
  parts: readonly MessagePart[],
  extra: { usage: Usage; error?: string; absorbedInto?: string },
): EventBody {
  const tools = toolTraces(parts);
  const approvals = parts.flatMap((part) =>
    part.type === "tool-approval-request"
      ? [{ approvalId: part.approvalId, toolCallId: part.toolCallId, toolName: part.toolName }]
      : [],
  );
  return {
    type: "terminal",
    conversationId: run.conversationId,
    runId: run.id,
    state,
    text: answerText(parts),
    usage: extra.usage,
    ...(extra.absorbedInto ? { absorbedInto: extra.absorbedInto } : {}),
    ...(extra.error ? { error: extra.error } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(approvals.length > 0 ? { approvals } : {}),
  };
}

// ---- purge ----

/**
 * What a purge does beyond the runtime's own tables, inside its transaction, as statements with
 * one parameter (the conversation id; `?`, which both engines' drivers bind here): schedules and
 * their occurrences go; outbox records stay as delivery history without their text or file, and those
 * not yet sent are cancelled (an empty text must never be sent).
 */
export const PURGE_COMPANION_SQL = [
  // The platform may deliver an update of the conversation again after the purge (a restart before
  // its offset was confirmed): its receipt stays, without content, so it is not admitted afresh.
  `UPDATE ingress_receipts SET conversation_id = NULL, run_id = NULL, input_message_id = NULL,
     outcome = 'purged', payload = 'null'
   WHERE conversation_id = ?`,
  "DELETE FROM schedule_occurrences WHERE schedule_id IN (SELECT id FROM schedules WHERE conversation_id = ?)",
  "DELETE FROM schedules WHERE conversation_id = ?",
  `UPDATE outbox SET markdown = '', rendered = NULL, media = NULL,
     state = CASE WHEN state IN ('pending', 'ambiguous', 'failed') THEN 'cancelled' ELSE state END
   WHERE conversation_id = ?`,
  // A child agent's link stays as the spawn's receipt, without the task it was given or the
  // context its result would have carried; a result due to a purged parent is never admitted.
  "UPDATE child_agents SET task = '', result_context = 'null' WHERE parent_conversation_id = ?",
  "UPDATE child_agents SET task = '' WHERE conversation_id = ?",
] as const;

/**
 * Why a purge of a live (not yet purged) conversation must not happen, or null to purge: runs
 * still active, or an expected version that is no longer the conversation's.
 */
export function purgeRefusal(
  activeRunIds: readonly string[],
  expectedVersion: number | undefined,
  actualVersion: number,
): Extract<PurgeResult, { outcome: "active" | "conflict" }> | null {
  if (activeRunIds.length > 0) return { outcome: "active", runIds: [...activeRunIds] };
  if (expectedVersion !== undefined && expectedVersion !== actualVersion) {
    return { outcome: "conflict", actualVersion };
  }
  return null;
}

// ---- reads ----

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

/** The joinable inputs of queued inject `runs`, in their order, each with its run's id. */
export function joinableInputs(
  runs: readonly RunRecord[],
  inputs: readonly Message[],
): Array<{ runId: string; message: Message }> {
  return runs.flatMap((r) =>
    inputs.filter((m) => r.inputMessageIds.includes(m.id)).map((message) => ({ runId: r.id, message })),
  );
}

/** A compaction save is refused unless it names the current version and moves the summary forward. */
export function summaryConflict(
  current: { version: number; throughFinishSeq: number } | null,
  request: { expectedVersion: number; throughFinishSeq: number },
): boolean {
  return (
    (current?.version ?? 0) !== request.expectedVersion ||
    (current !== null && request.throughFinishSeq <= current.throughFinishSeq)
  );
}

// ---- approvals ----

/** Whether an input admitted with `request` cancels the conversation's pending approvals. */
export function cancelsApprovals(request: Pick<AdmitRequest, "policy" | "approval">): boolean {
  return !request.approval && (request.policy === "supersede" || request.policy === "interrupt");
}

/**
 * A decision lands only on a pending approval of the same conversation; anything else is refused
 * with `state_conflict` (the admission rolls back: no run, no receipt).
 */
export function checkApprovalDecision(
  current: { state: string; conversation_id: string } | null,
  decision: ApprovalDecision,
  conversationId: string,
): void {
  if (!current || current.conversation_id !== conversationId) {
    throw new SwitchboardError("not_found", `No approval ${decision.approvalId} in this conversation.`);
  }
  if (current.state !== "pending") {
    throw new SwitchboardError(
      "state_conflict",
      `Approval ${decision.approvalId} was already ${current.state}.`,
      {
        details: { state: current.state },
      },
    );
  }
}

/** The conversation settings after "Always allow in this chat" for `tool`. */
export function withAlwaysAllowed(settings: ConversationSettings, tool: string): ConversationSettings {
  const tools = new Set(settings.alwaysAllow ?? []);
  tools.add(tool);
  return { ...settings, alwaysAllow: [...tools].sort() };
}
