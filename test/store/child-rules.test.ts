import { expect, test } from "bun:test";
import { TERMINAL_RUN_STATES } from "../../src/runtime/types.ts";
import { deliversResult, resultText, spawnAllowed, stopsChildren } from "../../src/store/child-rules.ts";

test("a spawn starts only below the running limit", () => {
  expect(spawnAllowed(3, 4)).toBe(true);
  expect(spawnAllowed(4, 4)).toBe(false);
});

test("a parent stopped, replaced, withdrawn, broken or timed out stops its children; one that completed or waits keeps them", () => {
  const stopping = TERMINAL_RUN_STATES.filter(stopsChildren);
  expect(stopping).toEqual(["interrupted", "superseded", "failed", "timeout", "cancelled"]);
});

test("a child delivers once, when its last run ends other than waiting for a person", () => {
  const running = { state: "running" as const };
  expect(deliversResult(running, "completed", 0)).toBe(true);
  expect(deliversResult(running, "failed", 0)).toBe(true);
  expect(deliversResult(running, "policy_stop", 0)).toBe(true);
  expect(deliversResult(running, "awaiting_approval", 0)).toBe(false);
  expect(deliversResult(running, "completed", 1)).toBe(false);
  expect(deliversResult({ state: "delivered" }, "completed", 0)).toBe(false);
  expect(deliversResult({ state: "cancelled" }, "interrupted", 0)).toBe(false);
  expect(deliversResult(null, "completed", 0)).toBe(false);
});

test("the result names the child, how it ended and its task, then the answer", () => {
  const link = { agent: "researcher", handle: "ag_1", task: `find\n  ${"x".repeat(300)}` };
  const done = resultText(link, "completed", "42", null);
  expect(
    done.startsWith("[Result of child agent researcher (handle ag_1), finished. Its task was: find xxx"),
  ).toBe(true);
  expect(done.split("\n\n")[0]!.length).toBeLessThan(300);
  expect(done.endsWith("\n\n42")).toBe(true);
  expect(resultText(link, "failed", " ", "model down")).toContain("ended failed (model down)");
  expect(resultText(link, "failed", " ", "model down").endsWith("(no answer)")).toBe(true);
});
