/** The derivation of a run's stream from its ledger: ids, resumption, tool calls told once. */
import { describe, expect, test } from "bun:test";
import {
  isAfter,
  newRunStreamMemory,
  parseStreamPosition,
  toRunStreamEvents,
} from "../../src/gateway/http/run-events.ts";
import type { RuntimeEvent } from "../../src/runtime/events.ts";
import { toolTraces } from "../../src/store/rules.ts";

const base = { durable: true as const, conversationId: "conv_1", runId: "run_1" };
const ledger: RuntimeEvent[] = [
  { ...base, type: "admission", seq: 4, inputMessageId: "m1", outcome: "admitted" },
  { ...base, type: "run-state", seq: 5, state: "running" },
  { ...base, type: "run-state", seq: 6, runId: "run_other", state: "running" },
  {
    ...base,
    type: "checkpoint",
    seq: 7,
    step: 1,
    durationMs: 3,
    text: "Let me look.",
    tools: [{ toolCallId: "c1", toolName: "search", input: { q: "x" } }],
  },
  {
    ...base,
    type: "checkpoint",
    seq: 9,
    step: 2,
    durationMs: 3,
    text: "Let me look.",
    tools: [
      { toolCallId: "c1", toolName: "search", input: { q: "x" }, outcome: "ok" },
      { toolCallId: "c2", toolName: "note", input: {} },
    ],
  },
  {
    ...base,
    type: "terminal",
    seq: 10,
    state: "awaiting_approval",
    text: "Let me look.",
    usage: {},
    tools: [
      { toolCallId: "c1", toolName: "search", input: { q: "x" }, outcome: "ok" },
      { toolCallId: "c2", toolName: "note", input: {} },
    ],
    approvals: [{ approvalId: "ap_1", toolCallId: "c2", toolName: "note" }],
  },
];

function derive() {
  const memory = newRunStreamMemory();
  return ledger.flatMap((event) => toRunStreamEvents(event, "run_1", memory));
}

describe("a run's stream", () => {
  test("each ledger event's events are numbered seq, seq.1, …; other runs' are left out", () => {
    expect(derive().map((e) => `${e.id} ${e.event}`)).toEqual([
      "4 admitted",
      "5 state",
      "7 step",
      "7.1 tool-call",
      "9 step",
      "9.1 tool-result",
      "9.2 tool-call",
      "10 approval",
      "10.1 answer",
    ]);
  });

  test("resuming after any id yields exactly the rest", () => {
    const all = derive();
    for (const [index, event] of all.entries()) {
      const position = parseStreamPosition(event.id!)!;
      expect(all.filter((e) => isAfter(e.id!, position))).toEqual(all.slice(index + 1));
    }
  });

  test("Last-Event-ID values it never wrote are not positions", () => {
    for (const value of ["", "abc", "1.2.3", "-1", "1e5", "1.", " 7"])
      expect(parseStreamPosition(value)).toBeNull();
    expect(parseStreamPosition("12.3")).toEqual({ seq: 12, index: 3 });
  });

  test("live deltas carry no id", () => {
    const delta: RuntimeEvent = {
      type: "assistant-delta",
      durable: false,
      conversationId: "conv_1",
      runId: "run_1",
      sequence: 1,
      delta: "Le",
    };
    expect(toRunStreamEvents(delta, "run_1", newRunStreamMemory())).toEqual([
      { event: "text-delta", data: { delta: "Le" } },
    ]);
  });
});

test("toolTraces: each call with its outcome once its result is there", () => {
  expect(
    toolTraces([
      { type: "text", text: "hi" },
      { type: "tool-call", toolCallId: "a", toolName: "t", input: 1 },
      { type: "tool-call", toolCallId: "b", toolName: "u", input: 2 },
      { type: "tool-result", toolCallId: "a", toolName: "t", output: "x", isError: true },
    ]),
  ).toEqual([
    { toolCallId: "a", toolName: "t", input: 1, outcome: "error" },
    { toolCallId: "b", toolName: "u", input: 2 },
  ]);
});
