/**
 * End to end through a real gateway process: discord.js against the Discord emulator (gateway
 * WebSocket + REST), the model behind the fake OpenAI-compatible server, SQLite on a temp file.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordGatewayEnv, slowAnswerRule, useE2eFixture } from "./support/fixture.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { metricValue } from "./support/metrics.ts";

const fixture = useE2eFixture("switchboard-e2e-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");
const mallory = discord.createUser("mallory");

function env(): Record<string, string> {
  return discordGatewayEnv(fixture, {
    surfaces: {
      "discord:dm": { inputPolicy: "supersede", delivery: "terminal" },
      "discord:group": { inputPolicy: "queue", delivery: "terminal" },
    },
    allowed: [alice.id, bob.id],
  });
}

/** What the bot posted in `channelId`, edits applied. */
const botReplies = (channelId: string) =>
  discord.visibleMessages(channelId).filter((m) => m.author.id === discord.bot.id);
const SLOW_CHUNKS = 6;
const SLOW_CHUNK_DELAY_MS = 400;
/** How long the slow answer streams from its first chunk to its last. */
const SLOW_STREAM_MS = (SLOW_CHUNKS - 1) * SLOW_CHUNK_DELAY_MS;

function waitForBotReply(channelId: string, text: string, timeoutMs: number) {
  return discord.waitFor(
    () => botReplies(channelId).find((m) => m.content.includes(text)),
    timeoutMs,
    `a bot reply containing "${text}" in channel ${channelId}`,
  );
}

describe("discord end to end", () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess(env());
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway?.kill("SIGTERM");
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("one message, one reply", async () => {
    const sent = discord.sendDm(alice.id, "hello there");
    const reply = await waitForBotReply(discord.dmChannelId(alice.id), "echo: hello there", 10_000);
    expect(reply.message_reference?.message_id).toBe(sent.id);
    expect(llm.requestsContaining("hello there").length).toBe(1);
  }, 20_000);

  test("the same MESSAGE_CREATE twice, and again after a restart: one model call, one reply", async () => {
    const dmChannel = discord.dmChannelId(bob.id);
    const sent = discord.sendDm(bob.id, "dedupe me please");
    await waitForBotReply(dmChannel, "echo: dedupe me please", 10_000);

    // The running client still has the message cached and drops the duplicate itself.
    const gatewayLogBefore = discord.gatewayLog.length;
    discord.redispatch(sent.id);
    expect(
      discord.gatewayLog
        .slice(gatewayLogBefore)
        .some((e) => e.event === "dispatch" && e.t === "MESSAGE_CREATE" && e.live),
    ).toBe(true);
    await Bun.sleep(300);

    await gateway.kill("SIGKILL");
    gateway = await startGatewayProcess(env());
    // The new client's cache is empty: this copy reaches ingress, which must recognise it.
    discord.redispatch(sent.id);
    await eventually(
      async () =>
        (await metricValue(gateway.url, "switchboard_inbound_duplicates_total", { channel: "discord" })) ===
        1,
      10_000,
      "ingress to report the replayed message as a duplicate",
    );
    await Bun.sleep(500);

    expect(llm.requestsContaining("dedupe me please").length).toBe(1);
    expect(botReplies(dmChannel).filter((m) => m.content.includes("dedupe me please")).length).toBe(1);
  }, 40_000);

  test("supersede in a DM: only the latest is answered and the first is absent from its prompt", async () => {
    llm.addRules([
      slowAnswerRule(
        "first slow thought",
        "slow answer one two three four",
        SLOW_CHUNKS,
        SLOW_CHUNK_DELAY_MS,
      ),
    ]);
    const dmChannel = discord.dmChannelId(alice.id);
    discord.sendDm(alice.id, "first slow thought");
    await eventually(
      () => llm.requestsContaining("first slow thought").length === 1,
      10_000,
      "the first model call",
    );
    discord.sendDm(alice.id, "second thought instead");
    await waitForBotReply(dmChannel, "echo: second thought instead", 15_000);
    // Let the superseded answer's stream run to where it would have ended had it not been cancelled.
    const firstAtMs = llm.requestsContaining("first slow thought")[0]?.receivedAtMs ?? Date.now();
    await Bun.sleep(Math.max(0, firstAtMs + SLOW_STREAM_MS + 500 - Date.now()));

    const second = llm.requestsContaining("second thought instead");
    expect(second.length).toBe(1);
    expect(JSON.stringify(second[0]?.messages)).not.toContain("first slow thought");
    expect(botReplies(dmChannel).some((m) => m.content.includes("slow answer"))).toBe(false);
  }, 30_000);

  test("queue in a guild channel: mentions answered in order; without a mention nothing happens", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "queued one" },
        reply: { kind: "text", text: "answer to queued one", chunks: 4, chunkDelayMs: 200 },
      },
    ]);
    const general = discord.generalChannelId;
    discord.sendChannelMessage(general, alice.id, "just chatting without mention");
    const one = discord.sendChannelMessage(general, alice.id, "queued one", { mentionBot: true });
    const two = discord.sendChannelMessage(general, bob.id, "queued two", { mentionBot: true });
    await waitForBotReply(general, "echo: queued two", 15_000);

    const replies = botReplies(general);
    const first = replies.findIndex((m) => m.content.includes("answer to queued one"));
    const second = replies.findIndex((m) => m.content.includes("echo: queued two"));
    expect(first).toBeGreaterThanOrEqual(0);
    expect(first).toBeLessThan(second);
    expect(replies[first]?.message_reference?.message_id).toBe(one.id);
    expect(replies[second]?.message_reference?.message_id).toBe(two.id);
    // The leading <@bot> is how people address the bot; the model sees the words only.
    expect(llm.requestsContaining("queued two")[0]?.lastUserText).toBe("queued two");
    // One channel, one conversation: the second prompt carries the first exchange.
    expect(JSON.stringify(llm.requestsContaining("queued two")[0]?.messages)).toContain(
      "answer to queued one",
    );
    expect(llm.requestsContaining("without mention").length).toBe(0);
    expect(
      await metricValue(gateway.url, "switchboard_inbound_ignored_total", {
        channel: "discord",
        reason: "not addressed to the bot",
      }),
    ).toBe(1);
  }, 30_000);

  test("a denied user never reaches the model", async () => {
    discord.sendDm(mallory.id, "let me in");
    await eventually(
      () => gateway.events().some((e) => e.event === "ingress.denied" && e.user === mallory.id),
      10_000,
      "ingress to deny mallory",
    );
    await Bun.sleep(300);
    expect(llm.requestsContaining("let me in").length).toBe(0);
    expect(botReplies(discord.dmChannelId(mallory.id)).length).toBe(0);
  }, 20_000);
});
