import { afterEach, expect, test } from "bun:test";
import type { Summarizer } from "../../src/runtime/compaction.ts";
import { createHarness, type RuntimeHarness, text } from "../support/runtime.ts";

let harness: RuntimeHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

test("summarising compaction folds old turns into a summary under a version check", async () => {
  const seen: Array<{ previous: string | null; turns: number; text: string }> = [];
  const summarize: Summarizer = async ({ previousSummary, turns }) => {
    const joined = JSON.stringify(turns);
    seen.push({ previous: previousSummary, turns: turns.length, text: joined });
    return `SUMMARY(${(joined.match(/question \d+/g) ?? []).join(",")})`;
  };
  harness = createHarness((call) => ({ type: "text", text: `answer ${call.callIndex + 1}` }), {
    history: { compaction: { afterTurns: 6, keepTurns: 2, summarize } },
  });
  const { runtime, model, stores } = harness;
  for (let i = 1; i <= 7; i++) {
    await runtime.submit({ conversationId: "c", idempotencyKey: `q${i}`, parts: text(`question ${i}`) })
      .result;
  }
  const deadline = Date.now() + 3000;
  while (seen.length === 0 && Date.now() < deadline) await Bun.sleep(20);
  await Bun.sleep(50);
  expect(seen.length).toBe(1);
  expect(seen[0]!.previous).toBeNull();
  expect(seen[0]!.text).toContain("question 1");
  expect(seen[0]!.text).toContain("question 5");
  expect(seen[0]!.text).not.toContain("question 6");

  await runtime.submit({ conversationId: "c", idempotencyKey: "q8", parts: text("question 8") }).result;
  const prompt = model.requests.at(-1)!;
  expect(prompt.promptText).toContain("SUMMARY(question 1,question 2,question 3,question 4,question 5)");
  expect(prompt.promptText).not.toContain("answer 3");
  expect(prompt.promptText).toContain("question 6");
  expect(prompt.promptText).toContain("question 7");

  // A compaction working from a stale summary version changes nothing.
  const stale = await stores.runtime.saveSummary({
    conversationId: "c",
    text: "stale",
    throughFinishSeq: 999,
    expectedVersion: 0,
    nowMs: Date.now(),
  });
  expect(stale).toEqual({ outcome: "conflict", actualVersion: 1 });
  const ctx = await stores.runtime.loadCompactionCandidates("c", { keepTurns: 2, maxTurns: 10 });
  expect(ctx.summary?.text).toStartWith("SUMMARY(");
  // The compacted turns stay readable for operators.
  const page = await stores.runtime.listMessages("c", { afterOrder: 0, limit: 100 });
  expect(page.items.some((i) => JSON.stringify(i.message.parts).includes("question 1"))).toBe(true);
});
