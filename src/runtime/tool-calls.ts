import type { MessagePart } from "./types.ts";

/*
 * Effects survive crashes: each tool call is marked started (durably) before it runs and its result
 * is saved after. After a crash, a call that started and has no result is decided here.
 */

export type ToolCallPart = Extract<MessagePart, { type: "tool-call" }>;

export const OUTCOME_UNKNOWN =
  "outcome unknown: the gateway restarted while this call was running; it may or may not have taken effect";

/**
 * Tool calls of the assistant message that have no result yet, in order; a call waiting for an
 * approval is not among them (this run never runs it).
 */
export function unresolvedCalls(parts: readonly MessagePart[]): ToolCallPart[] {
  const answered = new Set(parts.flatMap((p) => (p.type === "tool-result" ? [p.toolCallId] : [])));
  const waiting = new Set(parts.flatMap((p) => (p.type === "tool-approval-request" ? [p.toolCallId] : [])));
  return parts.filter(
    (p): p is ToolCallPart =>
      p.type === "tool-call" && !answered.has(p.toolCallId) && !waiting.has(p.toolCallId),
  );
}

export type ApprovalRequestPart = Extract<MessagePart, { type: "tool-approval-request" }>;
export type ApprovalResponsePart = Extract<MessagePart, { type: "tool-approval-response" }>;

/** The approval requests of the assistant message whose call has no result: the run must end at them. */
export function awaitingApproval(parts: readonly MessagePart[]): ApprovalRequestPart[] {
  const answered = new Set(parts.flatMap((p) => (p.type === "tool-result" ? [p.toolCallId] : [])));
  return parts.filter(
    (p): p is ApprovalRequestPart => p.type === "tool-approval-request" && !answered.has(p.toolCallId),
  );
}

/** What the model reads for a call a person did not approve. */
export function deniedOutput(response: ApprovalResponsePart): string {
  return response.reason === "expired"
    ? "not run: the approval request expired before anyone decided; ask again if it is still needed"
    : `not run: ${response.decidedBy} denied this call`;
}

export const BINDING_MISMATCH =
  "not run: the approved call does not match the request that was signed (refused for safety)";

/**
 * A successor run starts its turn with the calls its inputs decided: each call as the model made
 * it, followed by its denial when it was not approved (or its binding does not verify). Approved
 * calls are left without a result, so they run like any pending call: marked started, fenced,
 * once. Returns null when there is nothing to add (already seeded, or no decisions).
 */
export function seedDecidedCalls(
  inputs: readonly { parts: readonly MessagePart[] }[],
  parts: readonly MessagePart[],
  verify: (response: ApprovalResponsePart) => boolean,
  nowMs: number,
): MessagePart[] | null {
  const present = new Set(parts.flatMap((p) => (p.type === "tool-call" ? [p.toolCallId] : [])));
  const added: MessagePart[] = [];
  for (const input of inputs) {
    for (const part of input.parts) {
      if (part.type !== "tool-approval-response" || present.has(part.toolCallId)) continue;
      present.add(part.toolCallId);
      added.push({
        type: "tool-call",
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
      });
      const refusal = !part.approved ? deniedOutput(part) : verify(part) ? null : BINDING_MISMATCH;
      if (refusal !== null) {
        added.push({
          type: "tool-result",
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: refusal,
          isError: true,
          finishedAtMs: nowMs,
        });
      }
    }
  }
  return added.length > 0 ? [...added, ...parts] : null;
}

export type PendingDecision =
  /** Start the call (the first time, or once more for an idempotent tool). */
  | { kind: "run"; attempt: number }
  /** It may have had its effect: do not run it again; tell the model and the user. */
  | { kind: "unknown" };

/**
 * A call never started runs. One that started without a result was cut short by a crash: an
 * idempotent tool runs again, once; any other is reported as unknown and never run again.
 */
export function decidePending(call: ToolCallPart, idempotent: boolean): PendingDecision {
  if (call.startedAtMs === undefined) return { kind: "run", attempt: 1 };
  const attempts = call.attempts ?? 1;
  if (idempotent && attempts < 2) return { kind: "run", attempt: attempts + 1 };
  return { kind: "unknown" };
}

/**
 * The answer as the user gets it: after each call whose outcome is unknown, a line saying so, so
 * the user learns it whatever the model wrote. Added at the end only: the model's prompt ends
 * with the tool result, as providers expect.
 */
export function withUnknownOutcomeNotices(parts: readonly MessagePart[]): MessagePart[] {
  return parts.flatMap((part): MessagePart[] =>
    part.type === "tool-result" && part.output === OUTCOME_UNKNOWN
      ? [
          part,
          {
            type: "text",
            text: `⚠️ ${part.toolName}: the gateway restarted while this call was running, so it may or may not have taken effect; it was not run again.\n\n`,
          },
        ]
      : [part],
  );
}

export type ToolCallOutcome = "ok" | "error" | "unknown" | "started" | "not started";

/** One tool call of a run as operators see it (`runs show`). */
export interface ToolCallSummary {
  toolCallId: string;
  toolName: string;
  outcome: ToolCallOutcome;
  /** When it was (last) started and when its result was saved; null when that did not happen. */
  startedAtMs: number | null;
  finishedAtMs: number | null;
  durationMs: number | null;
  attempts: number;
}

/**
 * Every tool call of an assistant message with its timing and outcome: `ok` or `error` from its
 * result, `unknown` when a crash cut it short and it was not run again, `started` while it runs
 * (or when its run was cut short and not resumed yet), `not started` when it never ran.
 */
export function toolCallSummaries(parts: readonly MessagePart[]): ToolCallSummary[] {
  const results = new Map(
    parts.flatMap((p) => (p.type === "tool-result" ? [[p.toolCallId, p] as const] : [])),
  );
  return parts.flatMap((part): ToolCallSummary[] => {
    if (part.type !== "tool-call") return [];
    const result = results.get(part.toolCallId);
    const startedAtMs = part.startedAtMs ?? null;
    const finishedAtMs = result?.finishedAtMs ?? null;
    const outcome: ToolCallOutcome = result
      ? result.output === OUTCOME_UNKNOWN
        ? "unknown"
        : result.isError
          ? "error"
          : "ok"
      : startedAtMs === null
        ? "not started"
        : "started";
    return [
      {
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        outcome,
        startedAtMs,
        finishedAtMs,
        durationMs:
          startedAtMs !== null && finishedAtMs !== null && outcome !== "unknown"
            ? finishedAtMs - startedAtMs
            : null,
        attempts: part.attempts ?? (startedAtMs === null ? 0 : 1),
      },
    ];
  });
}

/** Whether a tool's result hands the run's turn over (its work goes on elsewhere). */
export type HandOver = (result: { toolName: string; output: unknown; isError: boolean }) => boolean;

/**
 * Whether the last step's calls handed the turn over: among the results that close the parts
 * (after the step's calls, none answered by the model yet), one `handsOver` says so. Read from
 * the parts alone, so a run resumed after a crash between the result and its end decides alike.
 */
export function handedOver(parts: readonly MessagePart[], handsOver: HandOver): boolean {
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    if (part.type !== "tool-result") return false;
    if (handsOver(part)) return true;
  }
  return false;
}
