/**
 * Where the model stage's time goes with an instant model (issue 18): one call made the
 * baseline's way (`generateText`), a bare `streamText` read through `.text`, a bare `streamText`
 * read part by part, and the runtime's own `runStep` (streamText plus idle timer, parts, events,
 * usage), all against the fake LLM server in this process, interleaved round by round so load
 * falls on every variant alike.
 *   npx bun bench/model-call.ts [--calls 300]
 * Prints each variant's p50 and p90 in ms and its median over generateText's.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText } from "ai";
import { toUsage } from "../src/models/usage.ts";
import { DEFAULT_RETRY } from "../src/runtime/retry.ts";
import { runStep } from "../src/runtime/step.ts";
import { systemClock } from "../src/util/clock.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { argInt } from "./util.ts";

const calls = argInt("--calls", 300);
const llm = startFakeLlmServer();
const provider = createOpenAICompatible({ name: "bench", baseURL: llm.openaiBaseUrl, includeUsage: true });
const model = provider.chatModel("test-model");
const prompt = "ping 1";

const variants: Record<string, () => Promise<unknown>> = {
  generateText: () => generateText({ model, prompt, maxRetries: 0 }),
  "streamText, .text": async () => await streamText({ model, prompt, maxRetries: 0 }).text,
  "streamText, fullStream": async () => {
    for await (const _part of streamText({ model, prompt, maxRetries: 0 }).fullStream) {
      // Read every part, as the runtime does.
    }
  },
  runStep: () =>
    runStep({
      conversationId: "conv_bench",
      runId: "run_bench",
      instructions: undefined,
      messages: [{ role: "user", content: prompt }],
      tools: undefined,
      models: [{ label: "bench", model }],
      retry: DEFAULT_RETRY,
      idleTimeoutMs: 60_000,
      signal: new AbortController().signal,
      clock: systemClock,
      readUsage: toUsage,
      emit: () => {},
      nextSequence: () => 0,
    }),
};

const timings = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < calls + 20; round++) {
  for (const [name, call] of Object.entries(variants)) {
    const startedAt = performance.now();
    await call();
    // The first 20 rounds warm up connections and the JIT.
    if (round >= 20) timings.get(name)!.push(performance.now() - startedAt);
  }
}
await llm.stop();

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
const reference = quantile(timings.get("generateText")!, 0.5);
console.log(`\nmodel call, instant fake LLM server in this process (${calls} calls each)`);
console.log("                              p50        p90    p50 / generateText");
for (const [name, values] of timings) {
  const p50 = quantile(values, 0.5);
  console.log(
    `  ${name.padEnd(24)} ${p50.toFixed(2).padStart(7)} ms ${quantile(values, 0.9).toFixed(2).padStart(7)} ms    ${(p50 / reference).toFixed(2)}`,
  );
}
