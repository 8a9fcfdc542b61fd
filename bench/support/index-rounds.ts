/**
 * What the history-search benches share: rounds that measure the same work with the search index
 * on and off, alternating which goes first so drift over a round favours neither, and the
 * terminal commits they time on either engine.
 */
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import { chatText } from "./chat-text.ts";

export interface IndexPair {
  on: number;
  off: number;
}

/**
 * Runs `rounds` rounds of `measure` (a rate, per second) with the index on and off, printing each
 * round, and returns the round of median ratio.
 */
export async function alternatingRounds(
  rounds: number,
  measure: (indexed: boolean, label: string) => Promise<number>,
): Promise<IndexPair> {
  const pairs: IndexPair[] = [];
  for (let round = 0; round < rounds; round++) {
    const onFirst = round % 2 === 1;
    const a = await measure(onFirst, `${onFirst ? "on" : "off"}-${round}`);
    const b = await measure(!onFirst, `${onFirst ? "off" : "on"}-${round}`);
    const [on, off] = onFirst ? [a, b] : [b, a];
    pairs.push({ on, off });
    console.log(
      `  round ${round + 1}: index off ${Math.round(off)}/s, on ${Math.round(on)}/s, ratio ${(on / off).toFixed(3)}`,
    );
  }
  return [...pairs].sort((a, b) => a.on / a.off - b.on / b.off)[Math.floor(rounds / 2)]!;
}

const { sentence } = chatText(7);

/**
 * Terminal commits per second (only commitTerminal is timed): each of `n` turns is admitted and
 * acquired, then committed with a 40-word answer, one at a time, as a gateway's runs end.
 */
export async function terminalCommitsPerSecond(store: OperatorRuntimeStore, n: number): Promise<number> {
  let ms = 0;
  for (let j = 0; j < n; j++) {
    const admitted = await store.admit({
      conversation: { id: `c-${j % 100}` },
      idempotencyKey: `k-${j}`,
      fingerprint: `f-${j}`,
      parts: [{ type: "text", text: `hello ${j} ${sentence(12)}` }],
      context: { channel: "telegram", principal: { id: `u${j % 100}` } },
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `run-${j}`, messageId: `msg-${j}` },
      nowMs: 1_700_000_000_000 + j,
    });
    const acquired = await store.acquireRun({ runId: admitted.runId, owner: "w", nowMs: j, leaseMs: 60_000 });
    const start = performance.now();
    await store.commitTerminal({
      fence: acquired!.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: sentence(40) }],
      nowMs: 1_700_000_000_000 + j,
    });
    ms += performance.now() - start;
  }
  return n / (ms / 1000);
}
