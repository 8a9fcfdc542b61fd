import type { AdmitRequest, AdmitResult, ApprovalDecision, RunRecord } from "../runtime/store.ts";
import type { StopReason, TerminalRunState } from "../runtime/types.ts";
import {
  admitted,
  cancelsApprovals,
  checkApprovalDecision,
  type EventBody,
  needsActiveRuns,
  planAdmission,
  priorDuplicate,
  receiptDuplicate,
} from "./rules.ts";
import {
  type AsyncSteps,
  runAsync,
  runSync,
  type Answer as StepAnswer,
  type StepCall,
  stepsOf,
} from "./steps.ts";

/**
 * The reads and writes admission needs from an engine, each inside the admitting transaction.
 * SQLite implements them synchronously; PostgreSQL as promises of the same ({@link AsyncSteps}).
 */
export interface AdmissionSteps {
  /** The admission an ingress identity already led to. PostgreSQL first locks the identity. */
  receipt(ingress: { source: string; key: string }): {
    conversation_id: string | null;
    run_id: string | null;
    input_message_id: string | null;
    outcome: string;
  } | null;
  /** The conversation mapped to `key`, creating it when new. */
  resolveKey(key: string, nowMs: number): string;
  /**
   * Makes this transaction the conversation's one writer until it ends (PostgreSQL locks its
   * head, creating it when new; SQLite's connection is the one writer already). Throws
   * `conversation_purged` for a purged conversation.
   */
  enterConversation(conversationId: string, nowMs: number): void;
  /** The input message this idempotency key already made in the conversation. */
  priorInput(
    conversationId: string,
    idempotencyKey: string,
  ): { fingerprint: string; run_id: string; id: string } | null;
  version(conversationId: string): number;
  activeRuns(conversationId: string): RunRecord[];
  /** Ends a run without its owner (run-writes.ts, endWithoutOwner); returns its event's seq. */
  endRun(run: RunRecord, state: TerminalRunState, nowMs: number): number;
  markStopRequested(runId: string, reason: StopReason): void;
  appendEvent(body: EventBody, nowMs: number): { seq: number; version: number };
  /** Adds the input to a queued run's inputs. */
  joinRun(run: RunRecord, inputMessageId: string): void;
  insertRun(run: {
    id: string;
    conversationId: string;
    priority: "urgent" | "normal";
    request: AdmitRequest;
  }): void;
  insertInput(input: { id: string; conversationId: string; runId: string; request: AdmitRequest }): void;
  /** The approval's state and conversation, locked for this transaction (PostgreSQL). */
  approvalState(approvalId: string): { state: string; conversation_id: string } | null;
  /** Records the decision on a pending approval and the run it queued. */
  decideApproval(decision: ApprovalDecision, successorRunId: string, nowMs: number): void;
  /** Adds `tool` to the conversation's always-allowed tools. */
  allowTool(conversationId: string, tool: string, nowMs: number): void;
  /** Cancels the conversation's pending approvals; returns their ids. */
  cancelApprovals(conversationId: string, nowMs: number): string[];
  recordReceipt(receipt: {
    ingress: NonNullable<AdmitRequest["ingress"]>;
    conversationId: string;
    runId: string;
    inputMessageId: string;
    nowMs: number;
  }): void;
}

/** The steps an engine takes through its store's ledger (events, conversation keys, run ends). */
export type LedgerSteps = Pick<
  AdmissionSteps,
  "resolveKey" | "version" | "activeRuns" | "endRun" | "appendEvent"
>;

type Admission = Generator<StepCall<AdmissionSteps>, AdmitResult, unknown>;
type Answer<K extends keyof AdmissionSteps> = StepAnswer<AdmissionSteps, K>;
const call = stepsOf<AdmissionSteps>();

/**
 * Durable, idempotent admission, written once for every engine: a repeated ingress identity or
 * idempotency key answers `duplicate` (or throws `idempotency_conflict`); otherwise the input's
 * policy acts on the conversation's active runs in durable order, the input joins the pending run
 * it coalesces with or starts its own, and the ledger records the admission.
 */
export function* admission(request: AdmitRequest): Admission {
  const { nowMs } = request;
  if (request.ingress) {
    const duplicate = receiptDuplicate(
      (yield call("receipt", request.ingress)) as Answer<"receipt">,
      request.ingress,
    );
    if (duplicate) {
      if (request.ingress.strict) {
        priorDuplicate(
          (yield call(
            "priorInput",
            duplicate.conversationId,
            request.idempotencyKey,
          )) as Answer<"priorInput">,
          request,
          duplicate.conversationId,
        );
      }
      return {
        ...duplicate,
        version: (yield call("version", duplicate.conversationId)) as Answer<"version">,
      };
    }
  }
  const conversationId =
    "id" in request.conversation
      ? request.conversation.id
      : ((yield call("resolveKey", request.conversation.key, nowMs)) as Answer<"resolveKey">);
  yield call("enterConversation", conversationId, nowMs);
  const prior = priorDuplicate(
    (yield call("priorInput", conversationId, request.idempotencyKey)) as Answer<"priorInput">,
    request,
    conversationId,
  );
  if (prior) return { ...prior, version: (yield call("version", conversationId)) as Answer<"version"> };

  if (request.approval) {
    checkApprovalDecision(
      (yield call("approvalState", request.approval.approvalId)) as Answer<"approvalState">,
      request.approval,
      conversationId,
    );
  }
  const active = needsActiveRuns(request)
    ? ((yield call("activeRuns", conversationId)) as Answer<"activeRuns">)
    : [];
  const plan = planAdmission(request, active);
  for (const effect of plan.effects) {
    if (effect.kind === "supersede") {
      yield call("endRun", effect.run, "superseded", nowMs);
      continue;
    }
    yield call("markStopRequested", effect.run.id, effect.reason);
    if (effect.announce) {
      const body: EventBody = {
        type: "run-state",
        conversationId,
        runId: effect.run.id,
        state: "interrupt_requested",
      };
      yield call("appendEvent", body, nowMs);
    }
  }

  const inputMessageId = request.proposedIds.messageId;
  const runId = plan.join?.id ?? request.proposedIds.runId;
  if (plan.join) yield call("joinRun", plan.join, inputMessageId);
  else yield call("insertRun", { id: runId, conversationId, priority: plan.priority, request });
  yield call("insertInput", { id: inputMessageId, conversationId, runId, request });
  let cancelledApprovals: string[] = [];
  if (request.approval) {
    yield call("decideApproval", request.approval, runId, nowMs);
    if (request.approval.alwaysAllowTool) {
      yield call("allowTool", conversationId, request.approval.alwaysAllowTool, nowMs);
    }
  } else if (cancelsApprovals(request)) {
    cancelledApprovals = (yield call("cancelApprovals", conversationId, nowMs)) as Answer<"cancelApprovals">;
  }
  if (request.ingress) {
    yield call("recordReceipt", { ingress: request.ingress, conversationId, runId, inputMessageId, nowMs });
  }
  const outcome = plan.join ? "coalesced" : "admitted";
  const body: EventBody = { type: "admission", conversationId, runId, inputMessageId, outcome };
  const { seq, version } = (yield call("appendEvent", body, nowMs)) as Answer<"appendEvent">;
  return admitted(plan, { conversationId, runId, inputMessageId, version, seq }, cancelledApprovals);
}

/** Runs an admission on an engine whose steps answer at once (inside a synchronous transaction). */
export function admitSync(request: AdmitRequest, steps: AdmissionSteps): AdmitResult {
  return runSync(admission(request), steps);
}

/** Runs an admission on an engine whose steps answer promises. */
export function admitAsync(request: AdmitRequest, steps: AsyncSteps<AdmissionSteps>): Promise<AdmitResult> {
  return runAsync(admission(request), steps);
}
