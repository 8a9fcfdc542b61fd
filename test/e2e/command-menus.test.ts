/**
 * Native command menus end to end in this process: the gateway composed on SQLite, discord.js
 * against the Discord emulator and grammY against the Telegram emulator. The commands are
 * registered at start and not again after a restart (the hash is in the database); a slash
 * command runs like the typed one, its answer delivered by the outbox as the interaction's
 * response (deferred first when it comes late); a redelivered interaction is a duplicate; a user
 * off the allow list gets a notice and nothing runs.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { CALLBACK_TYPE, startDiscordEmulator } from "../emulators/discord/index.ts";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { startTelegramEmulator } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { discordGatewayEnv, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";
import { sampleIn } from "./support/metrics.ts";

const fixture = useE2eFixture("switchboard-e2e-menus-dc-", startDiscordEmulator);
const { platform: discord } = fixture;
const alice = discord.createUser("alice");
const mallory = discord.createUser("mallory");
const telegram = startTelegramEmulator();
const slack = startSlackEmulator();
const slackAlice = { id: "U0ALICE001", name: "alice" };

const running: InProcessGateway[] = [];
afterAll(async () => {
  for (const gateway of running) await gateway.stop({ graceMs: 0 });
  await telegram.close();
  await slack.close();
}, GATEWAY_STOP_TIMEOUT_MS);

const env = () => ({
  ...discordGatewayEnv(fixture, { allowed: [alice.id], dbFile: "menus.sqlite" }),
  ...telegramGatewayEnv({ ...fixture, platform: telegram }, { allowed: [1001], dbFile: "menus.sqlite" }),
  SLACK_BOT_TOKEN: slack.botToken,
  SLACK_APP_TOKEN: slack.appToken,
  SLACK_API_URL: slack.apiUrl,
  SLACK_ALLOWED_USERS: slackAlice.id,
});

async function startGateway(discordSettings: Record<string, unknown> = {}): Promise<InProcessGateway> {
  const gateway = await startInProcessGateway(env(), {
    clock: systemClock,
    limits: FAST_PACING,
    channels: { discord: discordSettings },
  });
  running.push(gateway);
  return gateway;
}

describe("command menus", () => {
  test(
    "are registered at start, and not again when the gateway restarts with the same list",
    async () => {
      const first = await startGateway();
      // Telegram's menu is set in the background after the start.
      const settled = (gateway: typeof first) =>
        eventually(
          () =>
            ["discord", "telegram"].every((channel) =>
              gateway.logs.some(
                (r) =>
                  /^(discord|telegram)\.commands_(registered|unchanged)$/.test(r.event) &&
                  r.event.startsWith(channel),
              ),
            ),
          10_000,
          "both menus to be set or left as they are",
        );
      await settled(first);
      expect(discord.commandRegistrations).toHaveLength(1);
      expect(discord.registeredCommands("global").map((c) => c.name)).toContain("model");
      expect(telegram.callsOf("setMyCommands").length).toBeGreaterThan(0);
      const telegramCalls = telegram.callsOf("setMyCommands").length;
      await first.stop();

      const second = await startGateway();
      await settled(second);
      expect(discord.commandRegistrations).toHaveLength(1);
      expect(telegram.callsOf("setMyCommands")).toHaveLength(telegramCalls);
      expect(second.logs.map((r) => r.event)).toContain("discord.commands_unchanged");
      expect(second.logs.map((r) => r.event)).toContain("telegram.commands_unchanged");
      await second.stop();
    },
    GATEWAY_START_TIMEOUT_MS * 2,
  );

  test("a Discord slash command is answered through the outbox; a redelivery is a duplicate", async () => {
    const gateway = await startGateway();
    const dm = discord.dmChannelId(alice.id);
    const run = discord.runCommand(dm, alice.id, "tz", [{ name: "zone", value: "Europe/Berlin" }]);
    const answer = await discord.waitFor(
      () => discord.visibleMessages(dm).find((m) => m.content.includes("Europe/Berlin")),
      10_000,
      "the /tz answer",
    );
    expect(run.callbacks).toEqual([CALLBACK_TYPE.channelMessage]);
    expect(answer.id).toBe(run.originalMessageId!);

    const duplicates = async () =>
      sampleIn(await gateway.gateway.renderMetrics(), "switchboard_inbound_duplicates_total", {
        channel: "discord",
      });
    const before = await duplicates();
    discord.redispatchInteraction(run.id);
    await eventually(async () => (await duplicates()) === before + 1, 10_000, "the redelivered interaction");
    expect(discord.visibleMessages(dm).filter((m) => m.content.includes("Europe/Berlin"))).toHaveLength(1);

    // Someone off the allow list: told so, only them; nothing runs.
    const general = discord.generalChannelId;
    const refused = discord.runCommand(general, mallory.id, "new");
    await discord.waitFor(() => refused.callbacks.length === 1, 10_000, "the notice to mallory");
    expect(refused.callbackData[0]).toMatchObject({ flags: 64 });
    await gateway.stop();
  }, 30_000);

  test("an answer that is not ready in time goes through a deferred response", async () => {
    // The first try of the answer fails (Discord answers 500), so it is not ready when the
    // deferral is due (at once here): the outbox's retry then edits the "thinking…" response.
    const gateway = await startGateway({ interactionDeferMs: 0 });
    discord.failNext("POST /interactions/:id/:token/callback", { kind: "server_error", status: 500 });
    const dm = discord.dmChannelId(alice.id);
    const run = discord.runCommand(dm, alice.id, "schedules");
    await discord.waitFor(() => run.originalEdits.length === 1, 10_000, "the edited deferred response");
    // The failed first try (500) is not recorded as an answer; the deferral is.
    expect(run.callbacks).toEqual([CALLBACK_TYPE.deferredChannelMessage]);
    expect(run.originalEdits[0]).toContain("No schedules");
    expect(discord.message(run.originalMessageId!)?.message.flags).toBeUndefined();
    await gateway.stop();
  }, 30_000);

  test("a Slack slash command is answered in the channel it was run in, through the outbox", async () => {
    const gateway = await startGateway();
    const body = slack.slashCommand("/tz", { user: slackAlice, channel: "C0GENERAL1", text: "Asia/Tokyo" });
    const envelopeId = slack.pushSlashCommand(body);
    await slack.waitFor(() => slack.envelope(envelopeId)?.state === "acked", 10_000, "the ack");
    const answer = await slack.waitFor(
      () => slack.messages("C0GENERAL1").find((m) => m.text.includes("Asia/Tokyo")),
      10_000,
      "the /tz answer in the channel",
    );
    expect(answer.threadTs).toBeUndefined();
    slack.duplicate(envelopeId);
    await eventually(
      async () =>
        sampleIn(await gateway.gateway.renderMetrics(), "switchboard_inbound_duplicates_total", {
          channel: "slack",
        }) === 1,
      10_000,
      "the redelivered command",
    );
    expect(slack.messages("C0GENERAL1").filter((m) => m.text.includes("Asia/Tokyo"))).toHaveLength(1);
    await gateway.stop();
  }, 30_000);
});
