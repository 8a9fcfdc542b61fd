import { expect, test } from "bun:test";
import {
  awaitingApproval,
  BINDING_MISMATCH,
  decidePending,
  OUTCOME_UNKNOWN,
  seedDecidedCalls,
  type ToolCallPart,
  toolCallSummaries,
  unresolvedCalls,
  withUnknownOutcomeNotices,
} from "../../src/runtime/tool-calls.ts";
import type { MessagePart } from "../../src/runtime/types.ts";

const call = (id: string, extra: Partial<ToolCallPart> = {}): ToolCallPart => ({
  type: "tool-call",
  toolCallId: id,
  toolName: "notes_append",
  input: {},
  ...extra,
});
const result = (id: string, output: unknown = "ok"): MessagePart => ({
  type: "tool-result",
  toolCallId: id,
  toolName: "notes_append",
  output,
  isError: false,
});

test("unresolved calls are those without a result, in order", () => {
  const parts: MessagePart[] = [call("a"), result("a"), call("b"), { type: "text", text: "x" }, call("c")];
  expect(unresolvedCalls(parts).map((c) => c.toolCallId)).toEqual(["b", "c"]);
  expect(unresolvedCalls([call("a"), result("a")])).toEqual([]);
});

test("a call never started runs; one cut short runs again once only when idempotent", () => {
  expect(decidePending(call("a"), false)).toEqual({ kind: "run", attempt: 1 });
  expect(decidePending(call("a"), true)).toEqual({ kind: "run", attempt: 1 });
  const started = call("a", { startedAtMs: 1, attempts: 1 });
  expect(decidePending(started, false)).toEqual({ kind: "unknown" });
  expect(decidePending(started, true)).toEqual({ kind: "run", attempt: 2 });
  expect(decidePending(call("a", { startedAtMs: 1, attempts: 2 }), true)).toEqual({ kind: "unknown" });
  // Recorded before `attempts` existed: counts as one start.
  expect(decidePending(call("a", { startedAtMs: 1 }), true)).toEqual({ kind: "run", attempt: 2 });
});

test("the answer gets a notice after each call of unknown outcome, and nothing else changes", () => {
  const parts: MessagePart[] = [call("a"), result("a", OUTCOME_UNKNOWN), { type: "text", text: "Sorry." }];
  const shown = withUnknownOutcomeNotices(parts);
  expect(shown).toHaveLength(4);
  expect(shown[2]).toMatchObject({ type: "text" });
  expect((shown[2] as { text: string }).text).toContain("notes_append: the gateway restarted");
  const fine: MessagePart[] = [call("a"), result("a")];
  expect(withUnknownOutcomeNotices(fine)).toEqual(fine);
});

test("runs show: each call with its outcome, timing and attempts", () => {
  const parts: MessagePart[] = [
    call("ok", { startedAtMs: 1000, attempts: 1 }),
    { ...(result("ok") as object), finishedAtMs: 1250 } as MessagePart,
    call("failed", { startedAtMs: 2000, attempts: 2 }),
    {
      type: "tool-result",
      toolCallId: "failed",
      toolName: "notes_append",
      output: "boom",
      isError: true,
      finishedAtMs: 2010,
    },
    call("cut", { startedAtMs: 3000, attempts: 1 }),
    {
      type: "tool-result",
      toolCallId: "cut",
      toolName: "notes_append",
      output: OUTCOME_UNKNOWN,
      isError: true,
      finishedAtMs: 9000,
    },
    call("running", { startedAtMs: 4000, attempts: 1 }),
    call("waiting"),
  ];
  expect(toolCallSummaries(parts)).toEqual([
    {
      toolCallId: "ok",
      toolName: "notes_append",
      outcome: "ok",
      startedAtMs: 1000,
      finishedAtMs: 1250,
      durationMs: 250,
      attempts: 1,
    },
    {
      toolCallId: "failed",
      toolName: "notes_append",
      outcome: "error",
      startedAtMs: 2000,
      finishedAtMs: 2010,
      durationMs: 10,
      attempts: 2,
    },
    {
      toolCallId: "cut",
      toolName: "notes_append",
      outcome: "unknown",
      startedAtMs: 3000,
      finishedAtMs: 9000,
      durationMs: null,
      attempts: 1,
    },
    {
      toolCallId: "running",
      toolName: "notes_append",
      outcome: "started",
      startedAtMs: 4000,
      finishedAtMs: null,
      durationMs: null,
      attempts: 1,
    },
    {
      toolCallId: "waiting",
      toolName: "notes_append",
      outcome: "not started",
      startedAtMs: null,
      finishedAtMs: null,
      durationMs: null,
      attempts: 0,
    },
  ]);
});

// ---- approvals ----

const request = (id: string): MessagePart => ({
  type: "tool-approval-request",
  approvalId: `ap_${id}`,
  toolCallId: id,
  toolName: "notes_append",
});

const response = (id: string, approved: boolean, extra: Record<string, unknown> = {}) =>
  ({
    type: "tool-approval-response",
    approvalId: `ap_${id}`,
    toolCallId: id,
    toolName: "notes_append",
    input: { text: id },
    approved,
    decidedBy: "Alice",
    binding: "b",
    ...extra,
  }) as Extract<MessagePart, { type: "tool-approval-response" }>;

test("a call waiting for approval is never run by its run, which ends awaiting it", () => {
  const parts: MessagePart[] = [call("a"), request("a"), call("b")];
  expect(unresolvedCalls(parts).map((c) => c.toolCallId)).toEqual(["b"]);
  expect(awaitingApproval(parts).map((r) => r.toolCallId)).toEqual(["a"]);
  expect(awaitingApproval([...parts, result("a")])).toEqual([]);
});

test("a successor starts with the decided calls: approved ones left to run, denied ones answered", () => {
  const inputs = [
    { parts: [response("a", true)] },
    { parts: [response("b", false)] },
    { parts: [response("c", false, { reason: "expired" })] },
  ];
  const seeded = seedDecidedCalls(inputs, [], () => true, 5)!;
  expect(seeded.map((p) => [p.type, "toolCallId" in p ? p.toolCallId : ""])).toEqual([
    ["tool-call", "a"],
    ["tool-call", "b"],
    ["tool-result", "b"],
    ["tool-call", "c"],
    ["tool-result", "c"],
  ]);
  expect(unresolvedCalls(seeded).map((c) => c.toolCallId)).toEqual(["a"]);
  expect(seeded[0]).toMatchObject({ input: { text: "a" } });
  expect(seeded[2]).toMatchObject({ output: "not run: Alice denied this call", isError: true });
  expect(seeded[4]).toMatchObject({ output: expect.stringContaining("expired"), isError: true });
  // Already seeded (a resumed run): nothing more is added.
  expect(seedDecidedCalls(inputs, seeded, () => true, 6)).toBeNull();
});

test("an approved call whose binding does not verify is refused, not run", () => {
  const seeded = seedDecidedCalls([{ parts: [response("a", true)] }], [], () => false, 5)!;
  expect(unresolvedCalls(seeded)).toEqual([]);
  expect(seeded[1]).toMatchObject({ type: "tool-result", output: BINDING_MISMATCH, isError: true });
});
