import { expect, test } from "bun:test";
import type { OutboxMessageRecord } from "../../outbox/types.ts";
import type { ReplyStage } from "../../src/gateway/metrics.ts";
import { createReplyTimeline } from "../../src/gateway/reply-timeline.ts";

function setup() {
  let nowMs = 0;
  const observed: [ReplyStage, number][] = [];
  const timeline = createReplyTimeline(
    (stage, ms) => observed.push([stage, ms]),
    () => nowMs,
  );
  const at = (ms: number) => {
    nowMs = ms;
  };
  const record = (runId: string) => ({ runId }) as OutboxMessageRecord;
  return { timeline, observed, at, record };
}

test("each stage is timed from the end of the one before, from the platform's answer to the send's", () => {
  const { timeline, observed, at, record } = setup();
  at(0.5);
  const received = timeline.received();
  at(1.125);
  timeline.admitted("run_1", received, true, 0.25);
  at(1.5);
  timeline.modelCalls.started("run_1");
  at(40);
  timeline.modelCalls.finished("run_1");
  at(41.25);
  timeline.terminalCommitted("run_1");
  at(42);
  timeline.delivery.firstSendStarted(record("run_1"));
  at(44);
  timeline.delivery.firstSendAnswered(record("run_1"));
  expect(observed).toEqual([
    ["receive", 0.25],
    ["admit", 0.625],
    ["to_model", 0.375],
    ["model", 38.5],
    ["to_terminal", 1.25],
    ["to_send", 0.75],
    ["send", 2],
  ]);
});

test("a later step's model call, a joined input, a recovered reply and a retried send time nothing twice", () => {
  const { timeline, observed, at, record } = setup();
  timeline.admitted("run_1", timeline.received(), true);
  timeline.modelCalls.started("run_1");
  timeline.modelCalls.finished("run_1");
  at(5);
  timeline.modelCalls.started("run_1"); // a tool step: its wait is not admission's
  timeline.admitted("run_1", timeline.received(), false); // joined while running
  timeline.modelCalls.started("run_1");
  timeline.delivery.firstSendStarted(record("run_other")); // sent by a process that did not run it
  timeline.delivery.firstSendAnswered(record("run_other"));
  timeline.terminalCommitted("run_1");
  timeline.delivery.firstSendStarted(record("run_1")); // answered 429
  at(1005);
  timeline.delivery.firstSendStarted(record("run_1")); // the retry
  at(1007);
  timeline.delivery.firstSendAnswered(record("run_1"));
  expect(observed).toEqual([
    ["admit", 0],
    ["to_model", 0],
    ["model", 0],
    ["admit", 0],
    ["to_terminal", 5],
    ["to_send", 0],
    ["send", 2],
  ]);
});

test("admission is timed to its commit, not to when ingress hears of it after the run was acquired", () => {
  const { timeline, observed, at } = setup();
  const received = timeline.received();
  at(1);
  timeline.admissions.committed("run_1");
  at(3); // the lane's acquisition ran before ingress resumed
  timeline.admitted("run_1", received, true);
  at(4);
  timeline.modelCalls.started("run_1");
  at(6);
  timeline.admissions.committed("run_1"); // an input joins the running answer
  timeline.admitted("run_1", 5, false);
  expect(observed).toEqual([
    ["admit", 1],
    ["to_model", 3],
    ["admit", 1],
  ]);
});
