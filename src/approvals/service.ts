import type { InboundMessage } from "../../channels/types.ts";
import type { OutboxRepository } from "../../outbox/types.ts";
import { isSwitchboardError } from "../errors.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import type { SubmitRequest } from "../runtime/runtime.ts";
import type {
  ApprovalRecord,
  ApprovalRequestInsert,
  DeliveryPrompt,
  RuntimeStore,
} from "../runtime/store.ts";
import { type ApprovalAction, signAction, verifyAction } from "../util/approval-signing.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

/** Longest rendering of a call's arguments in a prompt; the rest is cut with an ellipsis. */
const MAX_ARGUMENT_CHARS = 600;

/** Who decides: a chat user (authorised against the request), an operator, or the expiry sweep. */
export type Decider =
  | { kind: "user"; id: string; name: string }
  | { kind: "operator"; name: string }
  | { kind: "expiry" };

export type DecisionOutcome =
  | { kind: "decided"; approval: ApprovalRecord; state: "approved" | "denied" | "expired"; runId: string }
  | { kind: "refused"; reason: "unknown" | "not allowed" | "already decided"; notice: string };

export interface ApprovalService {
  /** The prompts (text and signed buttons) a run ending at `approvals` sends after its answer. */
  prompts(approvals: readonly ApprovalRequestInsert[]): DeliveryPrompt[];
  /** A button press: verified, authorised, decided once. The notice is for the presser. */
  press(message: InboundMessage, source: string): Promise<string>;
  /** `/approve <id>` and `/deny <id>`: the reply to the writer. */
  command(message: InboundMessage, verb: "approve" | "deny", argument: string): Promise<string>;
  /** Any decision (operators, expiry, the two above). */
  decide(approvalId: string, action: ApprovalAction | "expire", decider: Decider): Promise<DecisionOutcome>;
  /** Marks prompts of approvals a newer message cancelled. */
  cancelled(approvalIds: readonly string[]): Promise<void>;
  /** Decides every pending approval past its expiry as expired; returns how many. */
  expireDue(): Promise<number>;
}

export interface ApprovalServiceOptions {
  /** Admits the decision with its successor run (the gateway's runtime, or the store directly). */
  submit: (request: SubmitRequest) => Promise<{ runId: string }>;
  store: RuntimeStore;
  outbox: OutboxRepository;
  /** User ids who may decide on the surface of `context` besides the asker. */
  approvers: (context: RunContext) => readonly string[];
  /** The HMAC key, known once the gateway started (SWITCHBOARD_APPROVAL_SECRET or the database's). */
  secret: () => string;
  clock: Clock;
  logger: Logger;
  /** Wakes the delivery worker after an outcome edit was enqueued. */
  notify: () => void;
}

/** `/approve <id>` and `/deny <id>` for an id that does not exist or that the writer may not decide. */
export const NOT_YOURS =
  "No approval request with that id is waiting for your decision. Check the id in the request's message (/approve ap_…).";

export const promptKey = (approvalId: string) => `approval:${approvalId}:prompt`;
const outcomeKey = (approvalId: string) => `approval:${approvalId}:outcome`;

/** A call's arguments as a person reads them: JSON, indented, cut to a readable length. */
export function readableArguments(input: unknown): string {
  const text = JSON.stringify(input ?? {}, null, 2) ?? "{}";
  return text.length <= MAX_ARGUMENT_CHARS ? text : `${text.slice(0, MAX_ARGUMENT_CHARS)}…`;
}

/** What the request message says once decided (its buttons removed). */
export function outcomeText(
  approval: Pick<ApprovalRecord, "id" | "toolName" | "input">,
  verdict: string,
): string {
  return `${verdict}: ${approval.toolName}\n${readableArguments(approval.input)}`;
}

/**
 * The outcome as a new message, for a prompt whose message cannot be edited (an operator resolved
 * its unsure send as delivered, so its message id is unknown). Short: the prompt above still
 * shows the arguments.
 */
export function outcomeNotice(approval: Pick<ApprovalRecord, "id" | "toolName">, verdict: string): string {
  return `${verdict}: ${approval.toolName} (${approval.id})`;
}

export function createApprovalService(options: ApprovalServiceOptions): ApprovalService {
  const { store, outbox, clock, logger } = options;

  const enqueueOutcome = async (approval: ApprovalRecord, verdict: string) => {
    const run = await store.loadRun(approval.runId);
    const context = readRunContext(run?.run.context);
    if (!context) return;
    await outbox.insert(
      [
        {
          key: outcomeKey(approval.id),
          runId: approval.runId,
          conversationId: approval.conversationId,
          channel: context.channel,
          account: context.account,
          target: context.target,
          kind: "message",
          markdown: outcomeText(approval, verdict),
          presentation: {
            editOf: promptKey(approval.id),
            orSend: { markdown: outcomeNotice(approval, verdict), approvalId: approval.id },
          },
        },
      ],
      clock.now(),
    );
    options.notify();
  };

  const verdictOf = (approval: ApprovalRecord): string => {
    switch (approval.state) {
      case "approved":
        return `✅ Approved by ${approval.decidedBy}`;
      case "denied":
        return `❌ Denied by ${approval.decidedBy}`;
      case "expired":
        return "⌛ Expired (not run)";
      case "cancelled":
        return "🚫 Cancelled by a newer message (not run)";
      default:
        return "⏳ Waiting for approval";
    }
  };

  /** Only the user whose message asked, or an approver of the surface, may decide. */
  const mayDecide = async (
    approval: ApprovalRecord,
    userId: string,
  ): Promise<{ ok: boolean; who: string }> => {
    const run = await store.loadRun(approval.runId);
    const context = readRunContext(run?.run.context);
    if (!context) return { ok: false, who: "the person who asked" };
    const approvers = options.approvers(context);
    return {
      ok: context.principal.id === userId || approvers.includes(userId),
      who: context.principal.name ?? "the person who asked",
    };
  };

  const decide: ApprovalService["decide"] = async (approvalId, action, decider) => {
    const approval = await store.loadApproval(approvalId);
    if (!approval)
      return { kind: "refused", reason: "unknown", notice: `No approval request ${approvalId}.` };
    if (decider.kind === "user") {
      const allowed = await mayDecide(approval, decider.id);
      if (!allowed.ok) {
        logger.info("approval.refused_decider", { approvalId, user: decider.id });
        return {
          kind: "refused",
          reason: "not allowed",
          notice: `Only ${allowed.who} or an approver can decide this.`,
        };
      }
    }
    if (approval.state !== "pending") {
      // A decision already committed: make sure its outcome shows (a crash may have come between).
      await enqueueOutcome(approval, verdictOf(approval));
      return {
        kind: "refused",
        reason: "already decided",
        notice: `Already decided: ${verdictOf(approval)}.`,
      };
    }
    const expired = action === "expire" || clock.now() >= approval.expiresAtMs;
    const state = expired ? "expired" : action === "deny" ? "denied" : "approved";
    const decidedBy =
      decider.kind === "user"
        ? decider.name
        : decider.kind === "operator"
          ? `operator ${decider.name}`
          : "expiry";
    const run = await store.loadRun(approval.runId);
    try {
      const admission = await options.submit({
        conversationId: approval.conversationId,
        // One successor per approval, whoever decides and however often.
        idempotencyKey: `approval:${approval.id}`,
        parts: [
          {
            type: "tool-approval-response",
            approvalId: approval.id,
            toolCallId: approval.toolCallId,
            toolName: approval.toolName,
            input: approval.input,
            approved: state === "approved",
            decidedBy,
            ...(state === "approved" ? {} : { reason: state }),
            binding: approval.binding,
          },
        ],
        context: run?.run.context ?? null,
        policy: "queue",
        approval: {
          approvalId: approval.id,
          state,
          decidedBy,
          ...(action === "always" && state === "approved" ? { alwaysAllowTool: approval.toolName } : {}),
        },
      });
      const decided = (await store.loadApproval(approval.id)) ?? approval;
      logger.info("approval.decided", { approvalId, state: decided.state, runId: admission.runId });
      await enqueueOutcome(decided, verdictOf(decided));
      return { kind: "decided", approval: decided, state, runId: admission.runId };
    } catch (error) {
      if (isSwitchboardError(error, "state_conflict") || isSwitchboardError(error, "idempotency_conflict")) {
        const now = (await store.loadApproval(approval.id)) ?? approval;
        await enqueueOutcome(now, verdictOf(now));
        return { kind: "refused", reason: "already decided", notice: `Already decided: ${verdictOf(now)}.` };
      }
      throw error;
    }
  };

  const noticeFor = (outcome: DecisionOutcome, action: ApprovalAction): string => {
    if (outcome.kind === "refused") return outcome.notice;
    if (outcome.state === "expired") return "This request expired; the call was not run.";
    if (outcome.state === "denied") return "Denied. The call will not run.";
    return action === "always" ? "Approved, and always allowed in this chat." : "Approved.";
  };

  return {
    prompts(approvals) {
      const secret = options.secret();
      return approvals.map((approval) => ({
        key: promptKey(approval.id),
        markdown: [
          `🔐 Approval needed: **${approval.toolName}**`,
          "```json",
          readableArguments(approval.input).replaceAll("```", "'''"),
          "```",
          `Or reply /approve ${approval.id} or /deny ${approval.id}.`,
        ].join("\n"),
        buttons: [
          [
            { label: "Approve", data: signAction(secret, approval.id, "approve") },
            { label: "Deny", data: signAction(secret, approval.id, "deny") },
          ],
          [{ label: "Always allow in this chat", data: signAction(secret, approval.id, "always") }],
        ],
      }));
    },

    async press(message) {
      const checked = verifyAction(options.secret(), message.action?.data ?? "");
      if (!checked.ok) {
        logger.warn("approval.forged_press", {
          channel: message.channel,
          user: message.principal.id,
          updateKey: message.updateKey,
          reason: checked.reason,
        });
        return "This button is not valid.";
      }
      const outcome = await decide(checked.approvalId, checked.action, {
        kind: "user",
        id: message.principal.id,
        name: message.principal.name ?? message.principal.id,
      });
      return noticeFor(outcome, checked.action);
    },

    async command(message, verb, argument) {
      const id = argument.trim().split(/\s+/)[0] ?? "";
      if (!/^ap_[0-9a-f]{12}$/.test(id)) {
        return `Usage: /${verb} <id>, with the id the approval request shows (e.g. /${verb} ap_0123456789ab).`;
      }
      const action: ApprovalAction = verb === "deny" ? "deny" : "approve";
      const outcome = await decide(id, action, {
        kind: "user",
        id: message.principal.id,
        name: message.principal.name ?? message.principal.id,
      });
      // An id typed by hand may be a guess: another user's request answers exactly as one that
      // does not exist, so the reply tells nobody which ids exist or whose they are. (A button is
      // shown in its chat already, so a press may say who can decide.)
      if (outcome.kind === "refused" && outcome.reason !== "already decided") return NOT_YOURS;
      return noticeFor(outcome, action);
    },

    decide,

    async cancelled(approvalIds) {
      for (const id of approvalIds) {
        const approval = await store.loadApproval(id);
        if (approval) await enqueueOutcome(approval, verdictOf(approval));
      }
    },

    async expireDue() {
      const due = await store.listApprovals({ expiredAtMs: clock.now(), limit: 100 });
      for (const approval of due) {
        await decide(approval.id, "expire", { kind: "expiry" }).catch((error) =>
          logger.warn("approval.expire_failed", { approvalId: approval.id, error }),
        );
      }
      return due.length;
    },
  };
}
