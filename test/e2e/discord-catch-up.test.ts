/**
 * Discord never redelivers a MESSAGE_CREATE a client missed. Through a real gateway process:
 * messages written while the gateway was down are fetched from the channel history on the next
 * start and answered once each, in order; what was answered before the crash is not answered again.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import {
  eventually,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-dc-catch-up-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const otherBot = discord.createUser("otherbot", { bot: true });
let gateway: GatewayProcess | undefined;

function env(): Record<string, string> {
  // Queue, not supersede: every message written while down deserves its own answer.
  return discordGatewayEnv(fixture, {
    surfaces: {
      "discord:dm": { inputPolicy: "queue", delivery: "terminal" },
      "discord:group": { inputPolicy: "queue", delivery: "terminal" },
    },
    allowed: [alice.id, otherBot.id],
  });
}

const botReplies = (channelId: string) =>
  discord.visibleMessages(channelId).filter((m) => m.author.id === discord.bot.id);
const catchUpEvents = (process: GatewayProcess) =>
  process.events().filter((e) => e.event === "channel.catch_up" && e.channel === "discord");

function waitForBotReply(channelId: string, text: string, timeoutMs: number) {
  return discord.waitFor(
    () => botReplies(channelId).find((m) => m.content.includes(text)),
    timeoutMs,
    `a bot reply containing "${text}" in channel ${channelId}`,
  );
}

describe("discord catch-up after downtime", () => {
  // Inside the describe, so it runs before the fixture's hook closes the emulator.
  afterAll(async () => {
    await gateway?.kill("SIGTERM");
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("messages written while the gateway was down are answered once each, in order", async () => {
    gateway = await startGatewayProcess(env());
    const dmChannel = discord.dmChannelId(alice.id);
    const general = discord.generalChannelId;
    // Nothing was ever admitted: no target to catch up.
    await eventually(() => catchUpEvents(gateway!).length === 1, 5_000, "the first catch-up log");
    expect(catchUpEvents(gateway)[0]).toMatchObject({ targets: 0, fetched: 0, delivered: 0 });

    discord.sendDm(alice.id, "answered before the crash");
    await waitForBotReply(dmChannel, "echo: answered before the crash", 10_000);
    discord.sendChannelMessage(general, alice.id, "general before the crash", { mentionBot: true });
    await waitForBotReply(general, "echo: general before the crash", 10_000);

    await gateway.kill("SIGKILL");
    // One DM goes to the gateway session of the dead process (nobody reads it), one only into history.
    const gatewayLogBefore = discord.gatewayLog.length;
    const missedOne = discord.sendDm(alice.id, "missed one");
    expect(
      discord.gatewayLog
        .slice(gatewayLogBefore)
        .some((e) => e.event === "dispatch" && e.t === "MESSAGE_CREATE" && e.live),
    ).toBe(false);
    const missedTwo = discord.writeUnseen(dmChannel, alice.id, "missed two");
    discord.writeUnseen(general, otherBot.id, "from another bot", { mentionBot: true });
    const missedGeneral = discord.writeUnseen(general, alice.id, "missed in general", { mentionBot: true });

    gateway = await startGatewayProcess(env());
    const two = await waitForBotReply(dmChannel, "echo: missed two", 15_000);
    const one = botReplies(dmChannel).find((m) => m.content.includes("echo: missed one"));
    const inGeneral = await waitForBotReply(general, "echo: missed in general", 15_000);
    await waitUntilSettled(env().SWITCHBOARD_DB!);

    expect(one?.message_reference?.message_id).toBe(missedOne.id);
    expect(two.message_reference?.message_id).toBe(missedTwo.id);
    expect(inGeneral.message_reference?.message_id).toBe(missedGeneral.id);
    const dmReplies = botReplies(dmChannel).map((m) => m.content);
    expect(dmReplies.findIndex((c) => c.includes("missed one"))).toBeLessThan(
      dmReplies.findIndex((c) => c.includes("missed two")),
    );
    for (const text of ["missed one", "missed two", "missed in general"]) {
      expect(llm.requestsContaining(text).length).toBe(1);
      expect(
        botReplies(text === "missed in general" ? general : dmChannel).filter((m) => m.content.includes(text))
          .length,
      ).toBe(1);
    }
    // The queue kept order: the second prompt carries the first exchange.
    expect(JSON.stringify(llm.requestsContaining("missed two")[0]?.messages)).toContain("echo: missed one");
    for (const text of ["answered before the crash", "general before the crash"]) {
      expect(llm.requestsContaining(text).length).toBe(1);
    }
    expect(botReplies(dmChannel).filter((m) => m.content.includes("answered before the crash")).length).toBe(
      1,
    );
    expect(llm.requestsContaining("from another bot").length).toBe(0);
    // Each target's page holds the bot's own answer (skipped); the other bot's message is skipped too.
    expect(catchUpEvents(gateway).at(-1)).toMatchObject({
      targets: 2,
      fetched: 6,
      delivered: 3,
      failedTargets: 0,
    });
  }, 60_000);

  test("a restart with nothing new answers nothing again", async () => {
    const modelCallsBefore = llm.requests().length;
    const dmRepliesBefore = botReplies(discord.dmChannelId(alice.id)).length;
    await gateway?.kill("SIGTERM");
    gateway = await startGatewayProcess(env());
    await eventually(() => catchUpEvents(gateway!).length === 1, 5_000, "the catch-up log");
    // The cursor is now the last message admitted; only the bot's own answer follows it.
    expect(catchUpEvents(gateway).at(-1)).toMatchObject({ targets: 2, delivered: 0, failedTargets: 0 });
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    expect(llm.requests().length).toBe(modelCallsBefore);
    expect(botReplies(discord.dmChannelId(alice.id)).length).toBe(dmRepliesBefore);
  }, 40_000);

  test("a session Discord refuses to resume: what was sent meanwhile is fetched from history and answered once", async () => {
    const dmChannel = discord.dmChannelId(alice.id);
    const catchUpsBefore = catchUpEvents(gateway!).length;
    // Discord forgets the session; a message now is dispatched to no session (it is only in history).
    discord.invalidateSessions();
    const gatewayLogBefore = discord.gatewayLog.length;
    const lost = discord.sendDm(alice.id, "sent while the session was gone");
    expect(discord.gatewayLog.slice(gatewayLogBefore).some((e) => e.event === "undelivered")).toBe(true);
    // The connection drops; discord.js tries to resume, is refused (op 9) and identifies anew.
    discord.dropGatewayConnections(4000);

    const reply = await waitForBotReply(dmChannel, "echo: sent while the session was gone", 20_000);
    expect(reply.message_reference?.message_id).toBe(lost.id);
    expect(discord.gatewayLog.some((e) => e.event === "resume_rejected")).toBe(true);
    // The catch-up logs its summary once every target is done, which can be after the answer shows.
    await eventually(() => catchUpEvents(gateway!).length === catchUpsBefore + 1, 5_000, "the catch-up log");
    expect(catchUpEvents(gateway!).at(-1)).toMatchObject({ delivered: 1, failedTargets: 0 });
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    expect(llm.requestsContaining("sent while the session was gone").length).toBe(1);
    expect(
      botReplies(dmChannel).filter((m) => m.content.includes("sent while the session was gone")).length,
    ).toBe(1);

    // The renewed session delivers live again.
    discord.sendDm(alice.id, "live after the renewal");
    await waitForBotReply(dmChannel, "echo: live after the renewal", 10_000);
  }, 40_000);
});
