import { describe, expect, test } from "bun:test";
import { answerDeliveryFor } from "../../src/gateway/delivery.ts";
import type { RunContext } from "../../src/run-context.ts";
import type { RunRecord } from "../../src/runtime/store.ts";
import { TERMINAL_RUN_STATES } from "../../src/runtime/types.ts";

const context: RunContext = {
  channel: "slack",
  account: "T1:A1",
  target: "C1:1700000000.000100",
  replyTo: "1700000000.000200",
  surface: "thread",
  delivery: "terminal",
  conversationKey: "slack:T1:C1:1700000000.000100",
  principal: { id: "U1" },
  origin: "user",
};

const run = (runContext: unknown = context) =>
  ({ id: "run_1", conversationId: "conv_1", state: "running", context: runContext }) as RunRecord;

describe("answerDeliveryFor: a finished run's answer → its outbox delivery", () => {
  test("sent where the run's context says, with the final state and text", () => {
    expect(answerDeliveryFor(run(), "completed", "Hello, world")).toEqual({
      runId: "run_1",
      conversationId: "conv_1",
      channel: "slack",
      account: "T1:A1",
      target: "C1:1700000000.000100",
      replyTo: "1700000000.000200",
      state: "completed",
      text: "Hello, world",
    });
  });

  test("every terminal state but absorbed is delivered, with its state (the outbox words a stop)", () => {
    for (const state of TERMINAL_RUN_STATES) {
      const delivery = answerDeliveryFor(run(), state, "x");
      if (state === "absorbed") expect(delivery).toBeNull();
      else expect(delivery?.state).toBe(state);
    }
  });

  test("no channel context (a test or tool run) or a context that does not parse delivers nothing", () => {
    expect(answerDeliveryFor(run(null), "completed", "x")).toBeNull();
    expect(answerDeliveryFor(run({ channel: "irc", target: "#x" }), "completed", "x")).toBeNull();
  });

  test("without a message to reply to, the delivery has no replyTo", () => {
    const { replyTo: _, ...withoutReply } = context;
    const delivery = answerDeliveryFor(run(withoutReply), "completed", "x");
    expect(delivery).not.toBeNull();
    expect(delivery).not.toHaveProperty("replyTo");
  });
});
