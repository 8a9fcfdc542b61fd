/** The chat's view of delegation: the progress line, a hand-over's agents, /status's lines. */
import { expect, test } from "bun:test";
import {
  delegationLine,
  handedOverTo,
  spawnProgressLine,
  withDelegationLine,
} from "../../src/children/progress.ts";
import { runningChildrenLines } from "../../src/children/status.ts";
import type { ChildRecord } from "../../src/children/store.ts";
import type { MessagePart } from "../../src/runtime/types.ts";

test("the line names each agent once; self is a helper", () => {
  expect(delegationLine(["researcher"])).toBe("_Asking researcher…_");
  expect(delegationLine(["researcher", "scribe", "researcher"])).toBe("_Asking researcher and scribe…_");
  expect(delegationLine(["self", "researcher", "scribe"])).toBe("_Asking a helper, researcher and scribe…_");
});

test("the preview's line comes from the step's own spawn calls, not earlier ones or other tools", () => {
  expect(
    spawnProgressLine([
      { toolName: "spawn_agent", input: { agent: "scribe" }, outcome: "ok" },
      { toolName: "web_fetch", input: { url: "https://example.com" } },
      { toolName: "spawn_agent", input: { agent: "researcher", task: "t", wait: false } },
    ]),
  ).toBe("_Asking researcher…_");
  expect(
    spawnProgressLine([{ toolName: "spawn_agent", input: { agent: "scribe" }, outcome: "error" }]),
  ).toBeNull();
  expect(spawnProgressLine([{ toolName: "spawn_agent", input: null }])).toBeNull();
  expect(spawnProgressLine([])).toBeNull();
});

const spawnResult = (id: string, agent: string, waiting: boolean): MessagePart => ({
  type: "tool-result",
  toolCallId: id,
  toolName: "spawn_agent",
  output: { handle: `ag_${id}`, agent, status: "running", waiting, note: "" },
  isError: false,
});

test("a hand-over's agents are the waited spawns among the results that close the answer", () => {
  const parts: MessagePart[] = [
    { type: "text", text: "Let me ask." },
    spawnResult("old", "scribe", true),
    { type: "text", text: "More." },
    spawnResult("a", "researcher", true),
    spawnResult("b", "scribe", false),
    spawnResult("c", "self", true),
  ];
  expect(handedOverTo(parts)).toEqual(["researcher", "self"]);
  expect(handedOverTo([{ type: "text", text: "done" }])).toEqual([]);
  expect(withDelegationLine("Let me ask.  ", ["researcher"])).toBe("Let me ask.\n\n_Asking researcher…_");
  expect(withDelegationLine("", ["researcher"])).toBe("_Asking researcher…_");
});

const child = (handle: string, run: Partial<ChildRecord["run"]>): ChildRecord => ({
  handle,
  agent: "researcher",
  task: "t",
  wait: false,
  depth: 1,
  parentRunId: "run_p",
  parentConversationId: "conv_p",
  toolCallId: "call",
  conversationId: `conv_${handle}`,
  runId: `run_${handle}`,
  state: "running",
  run: { id: `run_${handle}`, state: "running", steps: 1, startedAtMs: 1000, finishedAtMs: null, ...run },
  resultState: null,
  resultRunId: null,
  createdAtMs: 500,
  finishedAtMs: null,
});

test("/status: a count, then one line per running child with how long it has worked", () => {
  expect(runningChildrenLines([], 0)).toEqual(["Child agents: none running"]);
  expect(
    runningChildrenLines(
      [child("ag_a", {}), child("ag_b", { state: "queued", steps: 0, startedAtMs: null })],
      1000 + 150_000,
    ),
  ).toEqual([
    "Child agents: 2 running",
    "↳ researcher (ag_a): running, 1 step, for 3 min",
    "↳ researcher (ag_b): queued, 0 steps, for 3 min",
  ]);
  expect(runningChildrenLines([child("ag_a", { steps: 3 })], 1000 + 42_400)[1]).toBe(
    "↳ researcher (ag_a): running, 3 steps, for 42 s",
  );
});
