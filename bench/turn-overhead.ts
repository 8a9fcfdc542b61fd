/**
 * Runtime overhead of one turn with a zero-latency model, in a conversation with 10 and with
 * 10,000 prior messages, same process. Per-turn store work must not grow with history.
 *   npx bun bench/turn-overhead.ts [--turns 300]
 */
import { join } from "node:path";
import { type LanguageModelV4, unavailableUsage } from "../src/models/language-model-v4.ts";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const turns = argInt("--turns", 300);

/**
 * Answers "ok" at once and records nothing, so the figures are the runtime's own work (a recording
 * test model would add cost proportional to the prompt it copies).
 */
function zeroLatencyModel(): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "bench",
    modelId: "zero-latency",
    supportedUrls: {},
    doGenerate: async () => {
      throw new Error("not used");
    },
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          controller.enqueue({ type: "stream-start", warnings: [] });
          controller.enqueue({ type: "text-start", id: "t" });
          controller.enqueue({ type: "text-delta", id: "t", delta: "ok" });
          controller.enqueue({ type: "text-end", id: "t" });
          controller.enqueue({
            type: "finish",
            finishReason: { unified: "stop", raw: "stop" },
            usage: unavailableUsage(),
          });
          controller.close();
        },
      }),
    }),
  } as LanguageModelV4;
}
const dir = tempDir("switchboard-bench-");

async function seed(
  store: ReturnType<typeof openSqliteStores>["runtime"],
  conversationId: string,
  messages: number,
) {
  for (let i = 0; i < messages / 2; i++) {
    const admitted = await store.admit({
      conversation: { id: conversationId },
      idempotencyKey: `seed-${i}`,
      fingerprint: `seed-${i}`,
      parts: [{ type: "text", text: `earlier question number ${i}` }],
      context: null,
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `seed-run-${conversationId}-${i}`, messageId: `seed-msg-${conversationId}-${i}` },
      nowMs: Date.now(),
    });
    if (admitted.outcome === "duplicate") continue;
    const acquired = await store.acquireRun({
      runId: admitted.runId,
      owner: "seed",
      nowMs: Date.now(),
      leaseMs: 1000,
    });
    await store.commitTerminal({
      fence: acquired!.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: `earlier answer number ${i}` }],
      nowMs: Date.now(),
    });
  }
}

async function setup(priorMessages: number) {
  const stores = openSqliteStores(join(dir.path, `turns-${priorMessages}.sqlite`));
  await seed(stores.runtime, "bench", priorMessages);
  const model = zeroLatencyModel();
  const runtime = new Runtime({
    store: stores.runtime,
    models: [{ label: "zero-latency", model }],
    readUsage: toUsage,
  });
  let next = 0;
  const turn = () =>
    runtime.submit({
      conversationId: "bench",
      idempotencyKey: `t-${next++}`,
      parts: [{ type: "text", text: `q ${next}` }],
    }).result;
  return {
    turn,
    close: async () => {
      await runtime.close({ gracePeriodMs: 0 });
      stores.close();
    },
  };
}

async function timeTurns(turn: () => Promise<unknown>, count: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await turn();
  return performance.now() - start;
}

const small = await setup(10);
const large = await setup(10_000);
for (let i = 0; i < 30; i++) {
  await small.turn();
  await large.turn();
}
// Alternate blocks so drift in machine load affects both sides alike.
const rounds = 5;
let smallMs = 0;
let largeMs = 0;
for (let r = 0; r < rounds; r++) {
  smallMs += await timeTurns(small.turn, turns / rounds);
  largeMs += await timeTurns(large.turn, turns / rounds);
}
await small.close();
await large.close();
const smallPerTurn = smallMs / turns;
const largePerTurn = largeMs / turns;
console.log(`\nturn overhead (${turns} turns each, zero-latency model, alternating blocks)`);
console.log(`  10 prior messages        ${smallPerTurn.toFixed(3)} ms/turn`);
console.log(`  10,000 prior messages    ${largePerTurn.toFixed(3)} ms/turn`);
console.log(`  ratio (10,000 / 10)      ${(largePerTurn / smallPerTurn).toFixed(2)}   target <= 1.20`);
dir.cleanup();
