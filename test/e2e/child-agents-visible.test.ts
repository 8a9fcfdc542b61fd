/**
 * What the chat sees of child agents, the gateway composed in this process (grammY against the
 * Telegram emulator, the fake LLM server, SQLite): /status lists the conversation's running
 * children, and a streamed reply shows "Asking researcher…" while its agent delegates. The waited
 * hand-over's line is in child-agents-telegram.test.ts.
 */
import { afterEach, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import type { FakeLlmRule } from "../support/llm/fake-llm-rules.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-children-visible-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const ivy = user(7101, "Ivy");
const jon = user(7102, "Jon");
const TIMEOUT = 20_000;
let counter = 0;

let running: InProcessGateway[] = [];
afterEach(async () => {
  const stopping = running;
  running = [];
  await Promise.all(stopping.map((gateway) => gateway.stop()));
}, GATEWAY_STOP_TIMEOUT_MS);

/** A gateway with a `researcher` child agent; DMs answered in `delivery` mode. */
async function start(delivery: "terminal" | "stream"): Promise<InProcessGateway> {
  counter += 1;
  const config = join(dir.path, `visible-${counter}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "telegram:dm": { delivery, inputPolicy: "queue" } },
      agents: { researcher: { description: "finds things out", maxSteps: 4 } },
    }),
  );
  const gateway = await startInProcessGateway(
    {
      ...telegramGatewayEnv(fixture, { allowed: [ivy.id, jon.id], dbFile: `visible-${counter}.sqlite` }),
      SWITCHBOARD_CONFIG: config,
    },
    { clock: systemClock, limits: FAST_PACING },
  );
  running.push(gateway);
  return gateway;
}

const spawnRule = (prompt: string, task: string): FakeLlmRule => ({
  match: { lastUserContains: prompt, lastRole: "user" },
  reply: { kind: "tool-call", toolName: "spawn_agent", input: { agent: "researcher", task, wait: false } },
});
const botReply = (chatId: number, contains: string) =>
  telegram.waitForMessage(chatId, (m) => m.fromBot && m.visibleText.includes(contains), TIMEOUT);

test("/status lists the conversation's running children: agent, handle, state, steps, time at work", async () => {
  await start("terminal");
  llm.setRules([
    spawnRule("background please", "LONG-BACKGROUND-TASK"),
    {
      match: { lastRole: "tool", lastToolInputContains: "LONG-BACKGROUND-TASK" },
      reply: { kind: "text", text: "On it in the background." },
    },
    { match: { lastUserContains: "LONG-BACKGROUND-TASK", lastRole: "user" }, reply: { kind: "hang" } },
  ]);
  telegram.incoming({ chat: privateChat(ivy), from: ivy, text: "background please" });
  await botReply(ivy.id, "On it in the background.");
  await eventually(
    () => llm.requests().some((r) => r.lastUserText === "LONG-BACKGROUND-TASK"),
    TIMEOUT,
    "the child to ask its model",
  );
  telegram.incoming({ chat: privateChat(ivy), from: ivy, text: "/status" });
  const status = await botReply(ivy.id, "Child agents:");
  expect(status.visibleText).toContain("Answers: 0 running, 0 queued");
  expect(status.visibleText).toMatch(
    /Child agents: 1 running\n↳ researcher \(ag_[0-9a-f]{12}\): running, 0 steps, for \d+ s/,
  );
  // Each child on a line of its own, and the lines after it unchanged.
  expect(status.visibleText.split("\n")).toContain(
    "Replies: 0 waiting to be delivered, 0 ambiguous (an operator is checking them)",
  );

  telegram.incoming({ chat: privateChat(ivy), from: ivy, text: "/stop" });
  await botReply(ivy.id, "Stopped the child agents at work.");
  telegram.incoming({ chat: privateChat(ivy), from: ivy, text: "/status" });
  await eventually(
    () =>
      telegram
        .messages(ivy.id)
        .filter((m) => m.fromBot && m.visibleText.includes("Child agents:"))
        .at(1)
        ?.visibleText.includes("Child agents: none running"),
    TIMEOUT,
    "the second /status to say no child is running",
  );
}, 60_000);

test("streamed: the preview says the agent is delegating while it goes on, and the line is never the answer", async () => {
  await start("stream");
  llm.setRules([
    spawnRule("quick look", "LOOK-IN-BACKGROUND"),
    // The parent thinks on after the spawn, and the child works: neither answers before /stop.
    { match: { lastRole: "tool", lastToolInputContains: "LOOK-IN-BACKGROUND" }, reply: { kind: "hang" } },
    { match: { lastUserContains: "LOOK-IN-BACKGROUND", lastRole: "user" }, reply: { kind: "hang" } },
  ]);
  telegram.incoming({ chat: privateChat(jon), from: jon, text: "quick look please" });
  const preview = await botReply(jon.id, "Asking researcher…");
  expect(preview.visibleText).toBe("Asking researcher…");
  // A preview: sent, then edited when the run ends. /stop ends it with nothing said.
  telegram.incoming({ chat: privateChat(jon), from: jon, text: "/stop" });
  await eventually(
    () =>
      telegram.messages(jon.id).find((m) => m.messageId === preview.messageId)?.visibleText === "(stopped)",
    TIMEOUT,
    "the preview to end as the stopped answer",
  );
  expect(
    telegram.messages(jon.id).some((m) => m.fromBot && m.visibleText.includes("Asking researcher")),
  ).toBe(false);
}, 60_000);
