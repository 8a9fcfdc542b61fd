/**
 * Bugs the chaos soak found, pinned down without the chaos: each test replays the exact crash
 * window deterministically.
 */
import { afterEach, expect, test } from "bun:test";
import type { InboundMessage } from "../../channels/types.ts";
import { createScheduleService } from "../../schedules/service.ts";
import { type ChatCommands, type CommandScope, createChatCommands } from "../../src/gateway/commands.ts";
import { systemClock } from "../../src/util/clock.ts";
import { createHarness, type RuntimeHarness } from "../support/runtime.ts";

let harness: RuntimeHarness;
afterEach(async () => {
  await harness.close();
});

function setUp(): { commands: ChatCommands; scope: CommandScope } {
  harness = createHarness([]);
  const { stores, runtime } = harness;
  const schedules = createScheduleService({
    repository: stores.schedules,
    clock: systemClock,
    dispatch: async () => ({ status: "retry", reason: "not dispatched in this test" }),
  });
  const commands = createChatCommands({
    runtime,
    store: stores.runtime,
    state: stores.runtime,
    outbox: stores.outbox,
    schedules,
    defaultTimezone: "UTC",
    clock: systemClock,
    notify: () => {},
  });
  const message: InboundMessage = {
    channel: "telegram",
    account: "123",
    updateKey: "100020",
    principal: { id: "1001", isBot: false },
    conversationKey: "tg:123:dm:1001",
    replyTarget: "1001",
    surface: "dm",
    text: "/in 2s s00046 stretch your legs",
    messageId: "7",
    addressedToBot: true,
    attachments: [],
    receivedAtMs: Date.now(),
  };
  return { commands, scope: { message, conversationId: "conv_test", source: "telegram:123" } };
}

const countSchedules = () =>
  (harness.stores.db.query("SELECT count(*) AS n FROM schedules").get() as { n: number }).n;

test("a command whose process died after its receipt was committed runs when the update comes again", async () => {
  const { commands, scope } = setUp();
  // What the killed process left behind: the ingress receipt, no schedule, no reply.
  await harness.stores.runtime.claimIngress({
    source: scope.source,
    key: scope.message.updateKey,
    outcome: "command:in",
    payload: scope.message,
    conversationId: scope.conversationId,
    nowMs: Date.now(),
  });

  const redelivered = await commands.run("in", scope);
  expect(redelivered.duplicate).toBe(false);
  expect(redelivered.text).toContain("Scheduled sch_");
  expect(countSchedules()).toBe(1);
  expect(
    await harness.stores.outbox.show(`notice:${scope.source}:${scope.message.updateKey}`),
  ).not.toBeNull();

  // Once its reply is enqueued, the command is done: a further copy changes nothing.
  expect((await commands.run("in", scope)).duplicate).toBe(true);
  expect(countSchedules()).toBe(1);
});

test("a command run twice before its reply was enqueued creates one schedule", async () => {
  const { commands, scope } = setUp();
  const first = await commands.run("in", scope);
  // The crash window after the schedule insert and before the reply: drop the reply, run again.
  harness.stores.db.query("DELETE FROM outbox").run();
  const second = await commands.run("in", scope);
  expect(countSchedules()).toBe(1);
  expect(second.text).toBe(first.text);
});
