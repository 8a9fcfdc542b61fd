import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { InboundMessage } from "../../../channels/types.ts";
import { silentLogger } from "../../../src/util/log.ts";
import { type Harness, poll, startHarness } from "./harness.ts";

// Every test here talks to a local emulator over HTTP/WebSocket; none should take long.
setDefaultTimeout(5000);

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("Discord adapter: receiving with discord.js against the emulator", () => {
  test("connects quickly and knows its account", async () => {
    const startedAtMs = Date.now();
    harness = await startHarness();
    // GUILD_CREATE follows READY, so ClientReady does not wait discord.js's 15 s guild timeout.
    expect(Date.now() - startedAtMs).toBeLessThan(2000);
    expect(harness.adapter.account).toBe(harness.emulator.bot.id);
    expect(harness.adapter.isConnected()).toBe(true);
    await harness.adapter.stop();
    expect(harness.adapter.isConnected()).toBe(false);
    // The outbox may still drain after the gateway stopped: REST keeps its token.
    await harness.adapter.typing(`dc:${harness.emulator.generalChannelId}`);
    expect(harness.emulator.restCalls.at(-1)).toMatchObject({
      route: "POST /channels/:id/typing",
      status: 204,
    });
  });

  test("a DM becomes an InboundMessage addressed to the bot", async () => {
    harness = await startHarness();
    const { emulator, adapter } = harness;
    const alice = emulator.createUser("alice");
    const sent = emulator.sendDm(alice.id, "hello bot");
    const inbound = await harness.nextInbound((m) => m.updateKey === sent.id);
    const dmChannelId = emulator.dmChannelId(alice.id);
    expect(inbound).toEqual({
      channel: "discord",
      account: adapter.account,
      updateKey: sent.id,
      principal: { id: alice.id, name: "alice", isBot: false },
      conversationKey: `dc:${adapter.account}:dm:${alice.id}`,
      replyTarget: `dc:${dmChannelId}`,
      surface: "dm",
      where: { chat: dmChannelId },
      text: "hello bot",
      messageId: sent.id,
      addressedToBot: true,
      attachments: [],
      receivedAtMs: Date.parse(sent.timestamp),
    } satisfies InboundMessage);
  });

  test("guild messages: addressed only when the bot is mentioned or replied to", async () => {
    harness = await startHarness();
    const { emulator, adapter } = harness;
    const bob = emulator.createUser("bob");
    const channelId = emulator.generalChannelId;

    const plain = emulator.sendChannelMessage(channelId, bob.id, "just chatting");
    const mention = emulator.sendChannelMessage(channelId, bob.id, "what time is it?", { mentionBot: true });
    const plainIn = await harness.nextInbound((m) => m.updateKey === plain.id);
    const mentionIn = await harness.nextInbound((m) => m.updateKey === mention.id);

    expect(plainIn.addressedToBot).toBe(false);
    expect(plainIn.surface).toBe("group");
    expect(plainIn.conversationKey).toBe(`dc:${adapter.account}:ch:${channelId}`);
    expect(mentionIn.addressedToBot).toBe(true);
    // The addressing mention is dropped so the model reads what the person wrote.
    expect(mentionIn.text).toBe("what time is it?");
    expect(mentionIn.conversationKey).toBe(plainIn.conversationKey);
    // What bindings match: the channel, the server, and the author's roles (without @everyone).
    expect(plainIn.where).toEqual({ chat: channelId, guild: emulator.guildId, roles: [] });
    const withRole = emulator.sendChannelMessage(channelId, bob.id, "as a member", {
      roles: [emulator.memberRoleId],
    });
    const withRoleIn = await harness.nextInbound((m) => m.updateKey === withRole.id);
    expect(withRoleIn.where).toEqual({
      chat: channelId,
      guild: emulator.guildId,
      roles: [emulator.memberRoleId],
    });

    // A reply to the bot's own message counts as addressing it.
    const botReply = await adapter.send(mentionIn.replyTarget, {
      text: "noon",
      format: "plain",
      idempotencyKey: "k1",
    });
    const followUp = emulator.sendChannelMessage(channelId, bob.id, "thanks", {
      replyTo: botReply.messageIds[0],
    });
    const followUpIn = await harness.nextInbound((m) => m.updateKey === followUp.id);
    expect(followUpIn.addressedToBot).toBe(true);
    expect(followUpIn.replyTo).toBe(botReply.messageIds[0]);
  });

  test("per-user group sessions give each author their own conversation in a channel", async () => {
    harness = await startHarness({ config: { groupSessions: "per-user" } });
    const { emulator, adapter } = harness;
    const [carol, dave] = [emulator.createUser("carol"), emulator.createUser("dave")];
    const a = emulator.sendChannelMessage(emulator.generalChannelId, carol.id, "one", { mentionBot: true });
    const b = emulator.sendChannelMessage(emulator.generalChannelId, dave.id, "two", { mentionBot: true });
    const aIn = await harness.nextInbound((m) => m.updateKey === a.id);
    const bIn = await harness.nextInbound((m) => m.updateKey === b.id);
    expect(aIn.conversationKey).toBe(
      `dc:${adapter.account}:ch:${emulator.generalChannelId}:user:${carol.id}`,
    );
    expect(bIn.conversationKey).toBe(`dc:${adapter.account}:ch:${emulator.generalChannelId}:user:${dave.id}`);
    expect(aIn.replyTarget).toBe(bIn.replyTarget);
  });

  test("threads: thread surface and key; addressed when the bot created or joined the thread", async () => {
    harness = await startHarness();
    const { emulator, adapter } = harness;
    const erin = emulator.createUser("erin");
    const joined = emulator.createThread({ name: "with bot", ownerId: erin.id, botIsMember: true });
    const foreign = emulator.createThread({ name: "without bot", ownerId: erin.id, botIsMember: false });

    const inJoined = emulator.sendChannelMessage(joined, erin.id, "question");
    const inForeign = emulator.sendChannelMessage(foreign, erin.id, "chatter");
    const joinedIn = await harness.nextInbound((m) => m.updateKey === inJoined.id);
    const foreignIn = await harness.nextInbound((m) => m.updateKey === inForeign.id);

    expect(joinedIn.surface).toBe("thread");
    expect(joinedIn.conversationKey).toBe(`dc:${adapter.account}:thread:${joined}`);
    expect(joinedIn.replyTarget).toBe(`dc:${joined}`);
    expect(joinedIn.addressedToBot).toBe(true);
    // For bindings, a thread is in the channel that holds it.
    expect(joinedIn.where?.chat).toBe(emulator.generalChannelId);
    expect(foreignIn.surface).toBe("thread");
    expect(foreignIn.addressedToBot).toBe(false);
  });

  test("skips the bot's own messages and other bots' unless allowBots", async () => {
    harness = await startHarness();
    const { emulator, adapter } = harness;
    const robot = emulator.createUser("robot", { bot: true });
    const human = emulator.createUser("frank");
    // The emulator echoes the bot's own create as MESSAGE_CREATE, as Discord does.
    const own = await adapter.send(`dc:${emulator.generalChannelId}`, {
      text: "hi all",
      format: "plain",
      idempotencyKey: "own",
    });
    const fromBot = emulator.sendChannelMessage(emulator.generalChannelId, robot.id, "beep", {
      mentionBot: true,
    });
    const marker = emulator.sendChannelMessage(emulator.generalChannelId, human.id, "marker");
    await harness.nextInbound((m) => m.updateKey === marker.id);
    const keys = harness.received.map((m) => m.updateKey);
    expect(keys).not.toContain(own.messageIds[0]);
    expect(keys).not.toContain(fromBot.id);
    await harness.close();

    harness = await startHarness({ config: { allowBots: true } });
    const otherBot = harness.emulator.createUser("robot", { bot: true });
    const accepted = harness.emulator.sendChannelMessage(
      harness.emulator.generalChannelId,
      otherBot.id,
      "beep",
    );
    const acceptedIn = await harness.nextInbound((m) => m.updateKey === accepted.id);
    expect(acceptedIn.principal).toEqual({ id: otherBot.id, name: "robot", isBot: true });
  });

  test("a duplicate MESSAGE_CREATE of a cached message is dropped by discord.js itself", async () => {
    harness = await startHarness();
    const { emulator } = harness;
    const gina = emulator.createUser("gina");
    const first = emulator.sendDm(gina.id, "once");
    await harness.nextInbound((m) => m.updateKey === first.id);
    emulator.redispatch(first.id);
    const marker = emulator.sendDm(gina.id, "marker");
    await harness.nextInbound((m) => m.updateKey === marker.id);
    expect(harness.received.filter((m) => m.updateKey === first.id)).toHaveLength(1);
  });

  test("after a restart the new client takes a replayed message again, with the same updateKey", async () => {
    harness = await startHarness();
    const { emulator } = harness;
    const kim = emulator.createUser("kim");
    const message = emulator.sendDm(kim.id, "deliver me");
    const firstIn = await harness.nextInbound((m) => m.updateKey === message.id);
    const { received } = harness;
    await harness.adapter.stop();

    // A fresh client has an empty message cache, so only ingress's unique updateKey stops a duplicate run.
    const { createDiscordAdapter } = await import("../../../channels/discord/index.ts");
    const restarted = createDiscordAdapter(
      { token: emulator.token, apiUrl: emulator.apiUrl, readyTimeoutMs: 3000 },
      { logger: silentLogger },
    );
    const again: string[] = [];
    await restarted.start(async (inbound) => {
      again.push(inbound.updateKey);
      return {
        kind: "duplicate",
        runId: `run_${inbound.updateKey}`,
        conversationId: inbound.conversationKey,
      };
    });
    try {
      emulator.redispatch(message.id);
      await poll(() => (again.length > 0 ? again : undefined), 2000, "the replayed message");
      expect(again).toEqual([firstIn.updateKey]);
      expect(received).toHaveLength(1);
    } finally {
      await restarted.stop();
    }
  });

  test("messages of one conversation reach ingress in order even when ingress is slow", async () => {
    const order: string[] = [];
    harness = await startHarness({
      ingress: async (message) => {
        // The first message is slow; without per-conversation ordering the second would overtake it.
        if (message.text === "first") await Bun.sleep(100);
        order.push(message.text);
        return { kind: "admitted", runId: "r", conversationId: "c" };
      },
    });
    const hana = harness.emulator.createUser("hana");
    harness.emulator.sendDm(hana.id, "first");
    const second = harness.emulator.sendDm(hana.id, "second");
    await harness.nextInbound((m) => m.updateKey === second.id);
    expect(order).toEqual(["first", "second"]);
  });

  test("a failing ingress is retried in memory with the same updateKey, then logged as lost", async () => {
    let calls = 0;
    harness = await startHarness({
      ingressRetryDelaysMs: [10, 10],
      ingress: async (message) => {
        calls += 1;
        if (message.text === "flaky" && calls < 3) throw new Error("database is locked");
        if (message.text === "doomed") throw new Error("disk full");
        return { kind: "admitted", runId: "r", conversationId: "c" };
      },
    });
    const ivy = harness.emulator.createUser("ivy");
    const flaky = harness.emulator.sendDm(ivy.id, "flaky");
    await harness.nextInbound((m) => m.updateKey === flaky.id);
    expect(calls).toBe(3);
    const doomed = harness.emulator.sendDm(ivy.id, "doomed");
    const lost = await poll(
      () => harness?.logs.find((entry) => entry.level === "error" && entry.updateKey === doomed.id),
      2000,
      "the loss to be logged",
    );
    expect(lost.event).toBe("discord.message_lost");
    expect(lost.attempt).toBe(3);
  });

  test("a zombie connection (no heartbeat ACK) resumes, and Discord replays what was missed", async () => {
    harness = await startHarness({ emulator: { heartbeatIntervalMs: 150 } });
    const { emulator, adapter } = harness;
    const jack = emulator.createUser("jack");
    emulator.setHeartbeatAcks(false);
    await emulator.waitFor(() => emulator.gatewayLog.some((e) => e.event === "closed"), 3000, "zombie close");
    await poll(() => (adapter.isConnected() ? undefined : true), 1000, "isConnected to turn false");
    // Written while the client is away: kept by the session and replayed on RESUME.
    const missed = emulator.sendDm(jack.id, "sent while you were away");
    emulator.setHeartbeatAcks(true);
    const resumed = await emulator.waitFor(
      () => emulator.gatewayLog.find((e) => e.event === "resumed"),
      3000,
      "a RESUME",
    );
    expect(resumed.event === "resumed" && resumed.replayed).toBeGreaterThanOrEqual(1);
    const missedIn = await harness.nextInbound((m) => m.updateKey === missed.id);
    expect(missedIn.text).toBe("sent while you were away");
    expect(emulator.gatewayLog.filter((e) => e.event === "identified")).toHaveLength(1);
    await poll(() => (adapter.isConnected() ? true : undefined), 1000, "isConnected after resume");
  }, 10_000);

  test("start() gives up with platform_timeout when the gateway never gets ready", async () => {
    harness = await startHarness({ config: { requestTimeoutMs: 3000, readyTimeoutMs: 300 }, start: false });
    harness.emulator.failNext("GET /gateway/bot", { kind: "hang" });
    const startedAtMs = Date.now();
    const error = await harness.adapter.start(async () => ({ kind: "ignored", reason: "" })).catch((e) => e);
    expect(error.code).toBe("platform_timeout");
    expect(error.message).toContain("300 ms");
    expect(Date.now() - startedAtMs).toBeLessThan(2000);
    expect(harness.adapter.isConnected()).toBe(false);
  });

  test("a wrong token fails start() with unauthorized and never shows the token", async () => {
    harness = await startHarness({ config: { token: "not-the-right-token" }, start: false });
    const error = await harness.adapter.start(async () => ({ kind: "ignored", reason: "" })).catch((e) => e);
    expect(error.code).toBe("unauthorized");
    expect(error.message).not.toContain("not-the-right-token");
  });
});
