import { describe, expect, test } from "bun:test";
import { answeredBeforeCrash, endsAnswer } from "../../src/runtime/final-step.ts";

/** A run with `steps` saved steps whose last ended with `finishReason`. */
const saved = (steps: number, finishReason: string) => ({
  run: { steps },
  lastStep: { step: steps - 1, finishReason },
});

describe("answeredBeforeCrash: a run resumed after its last step was saved", () => {
  test("a final text step (stop) answered: finish with it", () => {
    const { run, lastStep } = saved(1, "stop");
    expect(answeredBeforeCrash(run, lastStep)).toBe(true);
  });

  test("a tool-call step did not: its results go back to the model", () => {
    const { run, lastStep } = saved(1, "tool-calls");
    expect(answeredBeforeCrash(run, lastStep)).toBe(false);
  });

  test("a step cut at the length limit or by a content filter answered, even without text at its end", () => {
    for (const reason of ["length", "content-filter", "other"]) {
      const { run, lastStep } = saved(3, reason);
      expect({ reason, answered: answeredBeforeCrash(run, lastStep) }).toEqual({ reason, answered: true });
    }
  });

  test("a step with text and tool calls did not, whatever part came last", () => {
    // The model wrote "Let me check." and called a tool: the finish reason, not the text, decides.
    const { run, lastStep } = saved(2, "tool-calls");
    expect(answeredBeforeCrash(run, lastStep)).toBe(false);
  });

  test("no saved step, or a record that is not the last counted step, is no answer", () => {
    expect(answeredBeforeCrash({ steps: 0 }, null)).toBe(false);
    expect(answeredBeforeCrash({ steps: 2 }, { step: 0, finishReason: "stop" })).toBe(false);
  });

  test("the live loop ends on the same rule", () => {
    expect(endsAnswer("stop")).toBe(true);
    expect(endsAnswer("length")).toBe(true);
    expect(endsAnswer("content-filter")).toBe(true);
    expect(endsAnswer("tool-calls")).toBe(false);
  });
});
