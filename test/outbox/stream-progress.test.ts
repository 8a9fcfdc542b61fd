/**
 * A streamed reply's progress line (StreamReplyTarget.progressLine): shown after a step whose
 * tool calls work elsewhere, replaced by the next step's text, never part of the final answer.
 */
import { afterEach, expect, test } from "bun:test";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { spawnProgressLine } from "../../src/children/progress.ts";
import type { ToolTrace } from "../../src/runtime/events.ts";
import { commitAnswer } from "../../src/store/outbox-writes.ts";
import { sqliteOutboxSteps } from "../../src/store/sqlite/outbox.ts";
import { runSync } from "../../src/store/steps.ts";
import { silentLogger } from "../../src/util/log.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import { FakeAdapter } from "./support/fake-adapter.ts";
import { OutboxDb } from "./support/outbox-db.ts";

const TARGET = "chat-p";
const CONVERSATION = "conv-p";
const RUN = "run_p";
let db: OutboxDb | undefined;
let worker: DeliveryWorker | undefined;
afterEach(async () => {
  await worker?.drain(0);
  db?.close();
});

const spawnCall: ToolTrace = {
  toolCallId: "call-1",
  toolName: "spawn_agent",
  input: { agent: "researcher", task: "look it up", wait: false },
};

test("the line shows after the spawn step, the next step's text replaces it, and the answer is only the text", async () => {
  db = new OutboxDb();
  const clock = new FakeClock();
  const adapter = new FakeAdapter({ clock, limits: { maxMessageChars: 4096, editIntervalMs: 100 } });
  worker = createDeliveryWorker({
    repo: db.repository(),
    adapters: new Map([["telegram", adapter]]),
    clock,
    random: () => 0,
    logger: silentLogger,
    firstPreviewWaitMs: 0,
  });
  await worker.start();
  const stream = worker.openStream({
    channel: "telegram",
    account: "bot-1",
    runId: RUN,
    conversationId: CONVERSATION,
    target: TARGET,
    progressLine: spawnProgressLine,
  });
  let sequence = 0;
  const base = { conversationId: CONVERSATION, runId: RUN };
  const checkpoint = (text: string, tools: ToolTrace[]) =>
    stream.handle({
      ...base,
      type: "checkpoint",
      durable: true,
      seq: ++sequence,
      step: 1,
      durationMs: 1,
      text,
      tools,
    });
  const delta = (text: string) =>
    stream.handle({ ...base, type: "assistant-delta", durable: false, sequence: ++sequence, delta: text });

  delta("Let me check.");
  await settle();
  expect(adapter.visible(TARGET)).toEqual(["Let me check."]);
  checkpoint("Let me check.", [spawnCall]);
  await clock.advance(100);
  expect(adapter.visible(TARGET)).toEqual(["Let me check.\n\n<i>Asking researcher…</i>"]);
  // The spawn answered; the next step writes: its text takes the line's place.
  delta(" It is running.");
  await clock.advance(100);
  expect(adapter.visible(TARGET)).toEqual(["Let me check. It is running."]);
  // A later step with the spawn answered shows no line.
  checkpoint("Let me check. It is running.", [{ ...spawnCall, outcome: "ok" }]);
  await clock.advance(100);
  expect(adapter.visible(TARGET)).toEqual(["Let me check. It is running."]);

  checkpoint("Let me check. It is running.", [{ ...spawnCall, toolCallId: "call-2" }]);
  await clock.advance(100);
  expect(adapter.visible(TARGET).at(-1)).toEndWith("<i>Asking researcher…</i>");
  const conn = db.connect();
  const final = "Let me check. It is running.";
  conn
    .transaction(() =>
      runSync(
        commitAnswer(
          {
            runId: RUN,
            conversationId: CONVERSATION,
            channel: "telegram",
            account: "bot-1",
            target: TARGET,
            state: "completed",
            text: final,
          },
          clock.now(),
        ),
        sqliteOutboxSteps(conn),
      ),
    )
    .immediate();
  stream.handle({
    ...base,
    type: "terminal",
    durable: true,
    seq: ++sequence,
    state: "completed",
    text: final,
    usage: {},
  });
  worker.notify();
  await clock.runUntil(() => adapter.visible(TARGET).join() === final, "the final text shown");
  expect(adapter.visible(TARGET)).toEqual([final]);
});
