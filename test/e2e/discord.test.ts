// Kept per platform: Discord's own receiving (a cached client, a replay after a restart, mentions).
/**
 * End to end through a real gateway process: discord.js against the Discord emulator (gateway
 * WebSocket + REST), the model behind the fake OpenAI-compatible server, SQLite on a temp file.
 * Input policies and the allowlist do not depend on the platform: telegram.test.ts has them.
 */

import { describe, expect, test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";
import { metricValue, unaddressedCount } from "./support/metrics.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");

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

function waitForBotReply(channelId: string, text: string, timeoutMs: number) {
  return discord.waitFor(
    () => botReplies(channelId).find((m) => m.content.includes(text)),
    timeoutMs,
    `a bot reply containing "${text}" in channel ${channelId}`,
  );
}

describe("discord end to end", () => {
  const running = fixture.gatewayAroundTests(env);

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

    await running.crashAndRestart();
    // The new client's cache is empty: this copy reaches ingress, which must recognise it.
    discord.redispatch(sent.id);
    await eventually(
      async () =>
        (await metricValue(running.process.url, "switchboard_inbound_duplicates_total", {
          channel: "discord",
        })) === 1,
      10_000,
      "ingress to report the replayed message as a duplicate",
    );
    await waitUntilSettled(env().SWITCHBOARD_DB!);

    expect(llm.requestsContaining("dedupe me please").length).toBe(1);
    expect(botReplies(dmChannel).filter((m) => m.content.includes("dedupe me please")).length).toBe(1);
  }, 40_000);

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
    expect(await unaddressedCount(running.process.url, "discord")).toBe(1);
  }, 30_000);
});
