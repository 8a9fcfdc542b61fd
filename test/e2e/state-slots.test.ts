/**
 * Goal and todo state end to end: a human sets the goal with /goal, the model keeps the todo list
 * with todo_write, the gateway is SIGKILLed and started again on the same SQLite file, and the
 * state is still there: in /status, /todo, and the next run's system prompt. /new starts without it.
 */
import { expect, test } from "bun:test";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { messageText } from "../support/llm/fake-llm-rules.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-state-", startTelegramEmulator);
const { llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const env = () =>
  telegramGatewayEnv(fixture, {
    allowed: [alice.id],
    surfaces: { "telegram:dm": { delivery: "terminal", inputPolicy: "queue" } },
    // The SIGKILL may cut a reply's send short: it becomes ambiguous, and must not hold the chat
    // for an operator here (this test is about the state, not delivery).
    extra: { SWITCHBOARD_AMBIGUOUS_HOLD_MS: "0" },
  });

const say = (text: string) => telegram.incoming({ chat: privateChat(alice), from: alice, text });
const reply = (includes: string) =>
  telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes(includes), 20_000);

test("state survives a SIGKILL, reaches the prompt bounded, shows in /status, and /new clears it", async () => {
  const first = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
  say("/goal Ship the 2.0 release by Friday");
  await reply("Goal set: Ship the 2.0 release by Friday");

  llm.setRules([
    {
      match: { lastUserContains: "plan it", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "todo_write",
        input: {
          items: [
            { text: "Freeze the branch", status: "done" },
            { text: "Write the release notes", status: "in_progress" },
            { text: "Tag v2.0", status: "pending" },
          ],
          expectedVersion: 0,
        },
      },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Planned: {{lastToolResult}}" } },
  ]);
  say("plan it please");
  const planned = await reply("Planned");
  expect(planned.visibleText).toContain('"version":1');
  // The first step already saw the goal the human set.
  expect(messageText(llm.requests()[0]!.messages[0]!)).toContain("Goal: Ship the 2.0 release by Friday");

  await first.kill("SIGKILL");
  const second = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);

  say("/status");
  const status = await reply("Goal: Ship the 2.0 release by Friday");
  expect(status.visibleText).toContain("todos: 2 open of 3");
  say("/todo");
  const todo = await reply("Todos: 2 open of 3");
  expect(todo.visibleText).toContain("Tag v2.0");

  llm.reset();
  llm.setRules([
    { match: { lastUserContains: "what next" }, reply: { kind: "text", text: "Next: tag it." } },
  ]);
  say("what next?");
  await reply("Next: tag it.");
  const system = messageText(llm.requests()[0]!.messages[0]!);
  expect(system).toContain("Goal: Ship the 2.0 release by Friday");
  expect(system).toContain("- [in progress] Write the release notes");
  expect(system).toContain("- [pending] Tag v2.0");
  expect(system).not.toContain("Freeze the branch");

  say("/goal done");
  await reply("Goal done: Ship the 2.0 release by Friday");
  say("/new");
  await reply("Started a new conversation");
  say("/goal");
  await reply("No goal set");
  await eventually(() => second.events().some((e) => e.event === "gateway.started"), 5000, "the restart");
  await second.kill("SIGTERM");
}, 90_000);
