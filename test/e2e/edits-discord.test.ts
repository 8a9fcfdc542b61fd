/**
 * Edits and status reactions on Discord, end to end in this process: discord.js against the
 * Discord emulator (MESSAGE_UPDATE with `edited_timestamp`, reactions recorded), the fake model
 * server, SQLite on a temp file.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-edits-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const general = discord.createTextChannel("general");
const WAIT_MS = 10_000;

const env = () =>
  discordGatewayEnv(fixture, {
    surfaces: {
      "discord:dm": { inputPolicy: "supersede", delivery: "terminal", edits: "new-input" },
      "discord:group": { inputPolicy: "queue", delivery: "terminal", requireMention: false, edits: "ignore" },
    },
    allowed: [alice.id],
  });

let running: InProcessGateway | undefined;
beforeAll(async () => {
  running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
}, GATEWAY_START_TIMEOUT_MS);
afterAll(() => running?.stop({ graceMs: 0 }), GATEWAY_STOP_TIMEOUT_MS);

const botReply = (channelId: string, text: string) =>
  discord.waitFor(
    () =>
      discord
        .visibleMessages(channelId)
        .find((m) => m.author.id === discord.bot.id && m.content.includes(text)),
    WAIT_MS,
    `a bot reply containing "${text}"`,
  );

describe("edits on Discord", () => {
  test("after the answer, in a DM with edits: new-input, the edited text is answered too; 👀 then ✅", async () => {
    const sent = discord.sendDm(alice.id, "what is 2+2");
    const dm = discord.dmChannelId(alice.id);
    await botReply(dm, "echo: what is 2+2");
    await discord.waitFor(
      () => discord.reactionsOn(sent.id).join() === "✅",
      WAIT_MS,
      "the ✅ reaction in place of 👀",
    );
    discord.editUserMessage(sent.id, "what is 3+3");
    await botReply(dm, "echo: what is 3+3");
    expect(llm.requestsContaining("what is 3+3")).toHaveLength(1);
  }, 20_000);

  test("after the answer, in a channel with edits: ignore, an edit is not answered; a redelivery is a duplicate", async () => {
    const sent = discord.sendChannelMessage(general, alice.id, "tell me a fact");
    await botReply(general, "echo: tell me a fact");
    // Status reactions are off outside DMs by default.
    expect(discord.reactionsOn(sent.id)).toEqual([]);
    const editedAtMs = Date.now();
    discord.editUserMessage(sent.id, "tell me a joke", editedAtMs);
    const ignoredEdits = () =>
      running!.logs.filter((r) => r.event === "ingress.ignored" && r.reason === "edit after the answer");
    await eventually(async () => ignoredEdits().length === 1, WAIT_MS, "the edit to be ignored");
    discord.editUserMessage(sent.id, "tell me a joke", editedAtMs);
    discord.sendChannelMessage(general, alice.id, "marker");
    await botReply(general, "echo: marker");
    expect(ignoredEdits()).toHaveLength(1);
    expect(llm.requestsContaining("tell me a joke")).toHaveLength(0);
  }, 20_000);
});
