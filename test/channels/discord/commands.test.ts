/**
 * Slash commands on Discord: discord.js against the Discord emulator, which validates command
 * registration like Discord and enforces an interaction's 3-second answer window and its token's
 * 15 minutes. Time is a fake clock shared by the adapter and the emulator; the outbox's part is
 * played by calling `send` with the reply target ingress got, as the outbox does.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { CommandSpec } from "../../../channels/commands.ts";
import { discordCommands } from "../../../channels/discord/commands.ts";
import { createDiscordAdapter, type DiscordAdapter } from "../../../channels/discord/index.ts";
import type { InboundMessage, IngressOutcome } from "../../../channels/types.ts";
import { commandMenu, MENU_COMMANDS } from "../../../src/gateway/command-list.ts";
import { CALLBACK_TYPE, type DiscordEmulator, startDiscordEmulator } from "../../emulators/discord/index.ts";
import { FakeClock } from "../../support/fake-clock.ts";
import { recordingLogger } from "../../support/logger.ts";
import { memoryStateStore } from "../matrix/helpers.ts";
import { poll } from "./harness.ts";

const menu = commandMenu(() => ["fast", "smart", "smart-long"]);
const open: Array<{ adapter: DiscordAdapter }> = [];
let emulator: DiscordEmulator | undefined;

afterEach(async () => {
  for (const { adapter } of open.splice(0)) await adapter.stop();
  await emulator?.close();
  emulator = undefined;
});

interface Setup {
  clock: FakeClock;
  state?: ReturnType<typeof memoryStateStore>;
  guild?: boolean;
  ingress?: (message: InboundMessage) => IngressOutcome;
}

async function startAdapter(setup: Setup) {
  emulator ??= startDiscordEmulator({ clock: setup.clock, heartbeatIntervalMs: 41_250 });
  const received: InboundMessage[] = [];
  const logger = recordingLogger();
  const adapter = createDiscordAdapter(
    {
      token: emulator.token,
      apiUrl: emulator.apiUrl,
      requestTimeoutMs: 2000,
      ...(setup.guild ? { commandsGuildId: emulator.guildId } : {}),
    },
    { clock: setup.clock, logger, commands: menu, ...(setup.state ? { state: setup.state } : {}) },
  );
  await adapter.start(async (message) => {
    received.push(message);
    return setup.ingress?.(message) ?? { kind: "command", reply: "" };
  });
  open.push({ adapter });
  return { adapter, received, logs: logger.records };
}

describe("Discord slash commands", () => {
  test("are registered globally at start and not again after a restart with the same list", async () => {
    const clock = new FakeClock(Date.now());
    const state = memoryStateStore();
    const first = await startAdapter({ clock, state });
    const discord = emulator!;
    expect(discord.commandRegistrations).toHaveLength(1);
    expect(discord.commandRegistrations[0]!.scope).toBe("global");
    const registered = discord.registeredCommands("global");
    expect(registered.map((c) => c.name)).toEqual(MENU_COMMANDS.map((c) => c.name));
    expect(registered.find((c) => c.name === "in")).toMatchObject({
      description: "A reminder after a delay",
      description_localizations: { de: "Eine Erinnerung nach einer Wartezeit" },
      contexts: [1, 0],
      options: [
        { type: 3, name: "delay", required: true },
        { type: 3, name: "prompt", required: true },
      ],
    });
    expect(registered.find((c) => c.name === "model")?.options).toEqual([
      { type: 3, name: "name", description: "A model name, or default", required: false, autocomplete: true },
    ]);
    expect(registered.find((c) => c.name === "new")?.options).toBeUndefined();
    expect(first.logs).toContainEqual(expect.objectContaining({ event: "discord.commands_registered" }));

    await first.adapter.stop();
    open.length = 0;
    const again = await startAdapter({ clock, state });
    expect(discord.commandRegistrations).toHaveLength(1);
    expect(again.logs).toContainEqual(expect.objectContaining({ event: "discord.commands_unchanged" }));
  });

  test("with DISCORD_COMMANDS_GUILD they go to that server only", async () => {
    await startAdapter({ clock: new FakeClock(Date.now()), guild: true });
    expect(emulator!.commandRegistrations.map((r) => r.scope)).toEqual([emulator!.guildId]);
    expect(emulator!.registeredCommands("global")).toEqual([]);
  });

  test("over Discord's limits: what does not fit is dropped and named", () => {
    const many: CommandSpec[] = Array.from({ length: 101 }, (_, i) => ({
      name: `c${i}`,
      description: "d",
      arguments: [],
      places: ["dm"],
    }));
    const { body, dropped } = discordCommands([
      { name: "long", description: "x".repeat(101), arguments: [], places: ["dm"] },
      ...many,
    ]);
    expect(body).toHaveLength(100);
    expect(dropped).toEqual([
      { name: "long", reason: "its description has 101 characters; Discord takes 1–100" },
      { name: "c100", reason: "past Discord's 100 commands" },
    ]);
  });

  test("a command is an input with the typed text; an answer within 3 s is the interaction's response", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({ clock });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.generalChannelId, alice.id, "in", [
      { name: "delay", value: "10m" },
      { name: "prompt", value: "stretch" },
    ]);
    const inbound = await poll(() => received[0], 3000, "the command at ingress");
    expect(inbound).toMatchObject({
      updateKey: `interaction:${run.id}`,
      text: "/in 10m stretch",
      principal: { id: alice.id },
      surface: "group",
      addressedToBot: true,
      conversationKey: `dc:${discord.bot.id}:ch:${discord.generalChannelId}`,
      replyTarget: `dc:${discord.generalChannelId}:i:${run.id}`,
    });
    expect(inbound.action).toBeUndefined();

    const receipt = await adapter.send(inbound.replyTarget, {
      text: "Scheduled.",
      format: "plain",
      idempotencyKey: "notice#0",
    });
    expect(run.callbacks).toEqual([CALLBACK_TYPE.channelMessage]);
    expect(receipt.messageIds).toEqual([run.originalMessageId!]);
    expect(discord.visibleMessages(discord.generalChannelId).at(-1)?.content).toBe("Scheduled.");
  });

  test("an answer later than 3 s goes through a deferred response ('thinking…', then edited)", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({ clock });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.dmChannelId(alice.id), alice.id, "status");
    const inbound = await poll(() => received[0], 3000, "the command at ingress");
    expect(inbound.surface).toBe("dm");

    await clock.advance(2000);
    await poll(() => (run.callbacks.length === 1 ? true : undefined), 3000, "the deferral");
    expect(run.callbacks).toEqual([CALLBACK_TYPE.deferredChannelMessage]);
    const thinking = discord.visibleMessages(discord.dmChannelId(alice.id)).at(-1)!;
    expect(thinking.flags).toBe(128);

    await clock.advance(8000);
    const receipt = await adapter.send(inbound.replyTarget, {
      text: "Model: default",
      format: "plain",
      idempotencyKey: "notice#0",
    });
    const second = await adapter.send(inbound.replyTarget, {
      text: "(continued)",
      format: "plain",
      idempotencyKey: "notice#1",
    });
    expect(run.originalEdits).toEqual(["Model: default"]);
    expect(receipt.messageIds).toEqual([thinking.id]);
    expect(run.followUps).toEqual([{ content: "(continued)", flags: 0 }]);
    expect(second.messageIds).toHaveLength(1);
    expect(discord.visibleMessages(discord.dmChannelId(alice.id)).map((m) => m.content)).toEqual([
      "Model: default",
      "(continued)",
    ]);
  });

  test("an answer whose callback took effect but whose reply was lost is not shown twice", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({ clock });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.generalChannelId, alice.id, "todo");
    const inbound = await poll(() => received[0], 3000, "the command at ingress");
    discord.failNext("POST /interactions/:id/:token/callback", { kind: "reset", afterCommit: true });
    const message = { text: "No todos.", format: "plain" as const, idempotencyKey: "n#0" };
    await expect(adapter.send(inbound.replyTarget, message)).rejects.toThrow();
    // The outbox retries the uncertain send: Discord says the interaction is answered (40060).
    await adapter.send(inbound.replyTarget, message);
    expect(run.callbacks).toEqual([CALLBACK_TYPE.channelMessage]);
    expect(
      discord.visibleMessages(discord.generalChannelId).filter((m) => m.content === "No todos."),
    ).toHaveLength(1);
  });

  test("an interaction's token never appears in an error", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({ clock });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.generalChannelId, alice.id, "help");
    const inbound = await poll(() => received[0], 3000, "the command at ingress");
    await clock.advance(2000);
    await poll(() => (run.callbacks.length === 1 ? true : undefined), 3000, "the deferral");
    discord.failNext("PATCH /webhooks/:id/:token/messages/@original", {
      kind: "api_error",
      status: 400,
      code: 50035,
      message: "Invalid Form Body",
    });
    const error = await adapter
      .send(inbound.replyTarget, { text: "Help", format: "plain", idempotencyKey: "n#0" })
      .then(
        () => null,
        (e: unknown) => e as Error & { details?: unknown },
      );
    expect(error).not.toBeNull();
    const shown = `${error!.message} ${JSON.stringify(error!.details)}`;
    expect(shown).toContain("/webhooks/");
    expect(shown).not.toContain(run.token);
  });

  test("an answer past the token's 15 minutes is posted in the channel", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({ clock });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.generalChannelId, alice.id, "export");
    const inbound = await poll(() => received[0], 3000, "the command at ingress");
    await clock.advance(2000);
    await poll(() => (run.callbacks.length === 1 ? true : undefined), 3000, "the deferral");

    await clock.advance(15 * 60_000);
    await adapter.send(inbound.replyTarget, { text: "Here it is.", format: "plain", idempotencyKey: "n#0" });
    expect(run.originalEdits).toEqual([]);
    const posted = discord.visibleMessages(discord.generalChannelId).at(-1)!;
    expect(posted).toMatchObject({ content: "Here it is." });
    expect(posted.webhook_id).toBeUndefined();
  });

  test("a redelivered interaction reaches ingress under the same key and is answered once", async () => {
    const clock = new FakeClock(Date.now());
    const { adapter, received } = await startAdapter({
      clock,
      ingress: (message) =>
        received.filter((m) => m.updateKey === message.updateKey).length > 1
          ? { kind: "duplicate", runId: null, conversationId: null }
          : { kind: "command", reply: "" },
    });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const run = discord.runCommand(discord.dmChannelId(alice.id), alice.id, "new");
    const first = await poll(() => received[0], 3000, "the command");
    discord.redispatchInteraction(run.id);
    const second = await poll(() => received[1], 3000, "the redelivery");
    expect(second.updateKey).toBe(first.updateKey);
    await adapter.send(first.replyTarget, { text: "Started.", format: "plain", idempotencyKey: "n#0" });
    expect(run.callbacks).toEqual([CALLBACK_TYPE.channelMessage]);
  });

  test("a command ingress does not take gets a notice only its user sees", async () => {
    const clock = new FakeClock(Date.now());
    await startAdapter({ clock, ingress: () => ({ kind: "ignored", reason: "user not allowed" }) });
    const discord = emulator!;
    const mallory = discord.createUser("mallory");
    const run = discord.runCommand(discord.generalChannelId, mallory.id, "new");
    await poll(() => (run.callbacks.length === 1 ? true : undefined), 3000, "the notice");
    expect(run.callbackData[0]).toMatchObject({
      content: "You are not on this bot's allow list, so it does not take commands from you.",
      flags: 64,
    });
  });

  test("/model autocompletes from the models map", async () => {
    await startAdapter({ clock: new FakeClock(Date.now()) });
    const discord = emulator!;
    const alice = discord.createUser("alice");
    const typing = discord.autocomplete(discord.generalChannelId, alice.id, "model", [
      { name: "name", value: "sm", focused: true },
    ]);
    await poll(() => (typing.callbacks.length === 1 ? true : undefined), 3000, "the suggestions");
    expect(typing.callbacks).toEqual([CALLBACK_TYPE.autocompleteResult]);
    expect(typing.callbackData[0]).toEqual({
      choices: [
        { name: "smart", value: "smart" },
        { name: "smart-long", value: "smart-long" },
      ],
    });
  });
});
