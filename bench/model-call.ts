/**
 * Where the model stage's time goes with an instant model (issue 18): one call made the
 * baseline's way (`generateText`), a bare `streamText` read through `.text`, a bare `streamText`
 * read part by part, and the runtime's own `runStep` (streamText plus idle timer, parts, events,
 * usage), all against the fake LLM server in this process, interleaved round by round so load
 * falls on every variant alike. With `--prompt FILE` (a request body the gateway sent, as
 * `bench/reply-latency.ts --save-prompt FILE` writes it), `streamText` and `runStep` also send
 * that prompt, byte for byte (instructions, message, tools as JSON Schema): the difference from
 * the one-line prompt is what the prompt's size costs. `--history N` puts N earlier turns (a
 * one-line question and answer each) before that prompt's message, as a gateway's conversation
 * memory does; `--pause-ms P` waits P ms before each call, as a paced user leaves the process idle.
 *   npx bun bench/model-call.ts [--calls 300] [--prompt FILE] [--history 40] [--pause-ms 700]
 * Prints each variant's p50 and p90 in ms and its median over generateText's.
 */
import { readFileSync } from "node:fs";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  generateText,
  type JSONSchema7,
  jsonSchema,
  type ModelMessage,
  streamText,
  type ToolSet,
  tool,
} from "ai";
import { toUsage } from "../src/models/usage.ts";
import { DEFAULT_RETRY } from "../src/runtime/retry.ts";
import { runStep } from "../src/runtime/step.ts";
import { systemClock } from "../src/util/clock.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { argInt } from "./util.ts";

const calls = argInt("--calls", 300);
const promptFile = process.argv.includes("--prompt")
  ? process.argv[process.argv.indexOf("--prompt") + 1]
  : undefined;
const historyTurns = argInt("--history", 0);
const pauseMs = argInt("--pause-ms", 0);
const llm = startFakeLlmServer();
const provider = createOpenAICompatible({ name: "bench", baseURL: llm.openaiBaseUrl, includeUsage: true });
const model = provider.chatModel("test-model");
const prompt = "ping 1";

interface SavedBody {
  messages: Array<{ role: string; content: string }>;
  tools?: Array<{ function: { name: string; description?: string; parameters: JSONSchema7 } }>;
}

/** The saved request's instructions, last user message and tools, as `streamText` takes them. */
function savedPrompt(file: string) {
  const body = JSON.parse(readFileSync(file, "utf8")) as SavedBody;
  const system = body.messages.find((m) => m.role === "system");
  const user = body.messages.findLast((m) => m.role === "user");
  if (!user) throw new Error(`${file} holds no user message; save a request body with --save-prompt.`);
  const tools: ToolSet = {};
  for (const { function: f } of body.tools ?? []) {
    tools[f.name] = tool({
      ...(f.description === undefined ? {} : { description: f.description }),
      inputSchema: jsonSchema(f.parameters),
    });
  }
  const history = Array.from({ length: historyTurns }, (_, i): ModelMessage[] => [
    { role: "user", content: [{ type: "text", text: `earlier question ${i}, a line of text` }] },
    { role: "assistant", content: [{ type: "text", text: `The answer to question ${i}, a line of text.` }] },
  ]).flat();
  return {
    instructions: system?.content,
    messages: [...history, { role: "user" as const, content: user.content }],
    tools,
  };
}
const saved = promptFile === undefined ? undefined : savedPrompt(promptFile);

const step = (input: {
  instructions: string | undefined;
  messages: ModelMessage[];
  tools: ToolSet | undefined;
}) =>
  runStep({
    conversationId: "conv_bench",
    runId: "run_bench",
    ...input,
    models: [{ label: "bench", model }],
    retry: DEFAULT_RETRY,
    idleTimeoutMs: 60_000,
    signal: new AbortController().signal,
    clock: systemClock,
    readUsage: toUsage,
    emit: () => {},
    nextSequence: () => 0,
  });

const variants: Record<string, () => Promise<unknown>> = {
  generateText: () => generateText({ model, prompt, maxRetries: 0 }),
  "streamText, .text": async () => await streamText({ model, prompt, maxRetries: 0 }).text,
  "streamText, fullStream": async () => {
    for await (const _part of streamText({ model, prompt, maxRetries: 0 }).fullStream) {
      // Read every part, as the runtime does.
    }
  },
  runStep: () =>
    step({ instructions: undefined, messages: [{ role: "user", content: prompt }], tools: undefined }),
  ...(saved
    ? {
        "streamText, saved prompt": async () => {
          for await (const _part of streamText({ model, ...saved, maxRetries: 0 }).fullStream) {
            // Read every part, as the runtime does.
          }
        },
        "runStep, saved prompt": () => step(saved),
      }
    : {}),
};

const timings = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < calls + 20; round++) {
  for (const [name, call] of Object.entries(variants)) {
    if (pauseMs > 0) await Bun.sleep(pauseMs);
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
