/**
 * History search end to end: a real gateway against the Telegram emulator and the fake model. The
 * model calls history_search, the match from an earlier conversation reaches the next step and
 * the answer; another user's search never finds it, and history_read on its reference is "not
 * found" for them.
 */
import { beforeAll, expect, test } from "bun:test";
import { privateChat, startTelegramEmulator, supergroupChat, user } from "../emulators/telegram/index.ts";
import { messageText } from "../support/llm/fake-llm-rules.ts";
import { runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-history-", startTelegramEmulator);
const { llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const bob = user(2002, "Bob");
const env = telegramGatewayEnv(fixture, {
  allowed: [alice.id, bob.id],
  surfaces: {
    "telegram:dm": { delivery: "terminal", inputPolicy: "queue" },
    // In forum topics the history tools see the whole group: every topic, whoever wrote there.
    "telegram:thread": {
      delivery: "terminal",
      inputPolicy: "queue",
      requireMention: false,
      historyScope: "channel",
    },
  },
});

beforeAll(async () => {
  await fixture.startGateway(env, GATEWAY_START_TIMEOUT_MS);
}, GATEWAY_START_TIMEOUT_MS + 5000);

const say = (who: typeof alice, text: string) =>
  telegram.incoming({ chat: privateChat(who), from: who, text });
const reply = (who: typeof alice, includes: string) =>
  telegram.waitForMessage(who.id, (m) => m.fromBot && m.visibleText.includes(includes), 20_000);

test("the model searches the user's past conversations and the match reaches the next step; another user finds nothing", async () => {
  llm.setRules([
    { match: { lastUserContains: "locker code is" }, reply: { kind: "text", text: "Noted the code." } },
  ]);
  say(alice, "my locker code is 4711 zebra");
  await reply(alice, "Noted the code.");
  say(alice, "/new");
  await reply(alice, "Started a new conversation");

  llm.setRules([
    {
      match: { lastUserContains: "what was my locker", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "locker code", limit: 3 } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Found: {{lastToolResult}}" } },
  ]);
  say(alice, "what was my locker code?");
  const found = await reply(alice, "Found:");
  expect(found.visibleText).toContain("4711");
  const toolStep = llm.requests().find((r) => r.messages.at(-1)?.role === "tool")!;
  const result = JSON.parse(messageText(toolStep.messages.at(-1)!)) as {
    results: Array<{ ref: string; snippet: string; conversation: string }>;
  };
  expect(result.results[0]!.snippet).toContain("[locker] [code]");
  expect(result.results[0]!.conversation).not.toBe("this conversation");
  const aliceRef = result.results[0]!.ref;

  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "what was my locker", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "locker code 4711" } },
    },
    {
      match: { lastUserContains: "read that message", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_read", input: { ref: aliceRef } },
    },
    {
      match: { lastUserContains: "broken query", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: '"unclosed' } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Bob sees: {{lastToolResult}}" } },
  ]);
  say(bob, "what was my locker code?");
  const bobSearch = await reply(bob, "Bob sees:");
  expect(bobSearch.visibleText).toContain('"results":[]');
  say(bob, "read that message please");
  const bobRead = await telegram.waitForMessage(
    bob.id,
    (m) => m.fromBot && m.visibleText.includes("Bob sees:") && m.visibleText.includes("No message"),
    20_000,
  );
  expect(bobRead.visibleText).not.toContain("4711");
  expect(bobRead.visibleText).toContain(`No message ${aliceRef} was found.`);
  say(bob, "broken query please");
  const broken = await telegram.waitForMessage(
    bob.id,
    (m) => m.fromBot && m.visibleText.includes("unclosed quote"),
    20_000,
  );
  expect(broken.visibleText).toContain("Bob sees:");
}, 90_000);

test('historyScope "channel": a topic finds another user\'s message in another topic of the group, never a DM, not even by reference', async () => {
  const forum = supergroupChat(-1007770001, "Team", { isForum: true });
  const inTopic = (who: typeof alice, threadId: number, text: string) =>
    telegram.incoming({ chat: forum, from: who, text, topic: { threadId, name: `topic ${threadId}` } });
  const groupReply = (includes: string) =>
    telegram.waitForMessage(forum.id, (m) => m.fromBot && m.visibleText.includes(includes), 20_000);
  llm.reset();
  llm.setRules([
    { match: { lastUserContains: "codename is" }, reply: { kind: "text", text: "Noted the codename." } },
    { match: { lastUserContains: "dm password is" }, reply: { kind: "text", text: "Noted the password." } },
  ]);
  inTopic(bob, 5, "the release codename is heron");
  await groupReply("Noted the codename.");
  say(bob, "my dm password is walrus");
  await reply(bob, "Noted the password.");
  const [dmHit] = await runCliJson<Array<{ ref: string }>>(["search", "walrus"], {
    SWITCHBOARD_DB: env.SWITCHBOARD_DB!,
  });
  expect(dmHit?.ref).toBeDefined();

  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "which codename", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "codename" } },
    },
    {
      match: { lastUserContains: "which password", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "password walrus" } },
    },
    {
      match: { lastUserContains: "read the dm", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_read", input: { ref: dmHit!.ref } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Room sees: {{lastToolResult}}" } },
  ]);
  inTopic(alice, 9, "which codename did we pick?");
  const found = await groupReply("heron");
  expect(found.visibleText).toContain("Room sees:");
  inTopic(alice, 9, "which password did bob say?");
  const none = await telegram.waitForMessage(
    forum.id,
    (m) => m.fromBot && m.visibleText.includes("Room sees:") && m.visibleText.includes('"results":[]'),
    20_000,
  );
  expect(none.visibleText).not.toContain("walrus");
  inTopic(alice, 9, "read the dm please");
  const refused = await groupReply(`No message ${dmHit!.ref} was found.`);
  expect(refused.visibleText).not.toContain("walrus");
}, 90_000);
