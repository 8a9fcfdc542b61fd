/**
 * Two Discord bots in one gateway: the `default` bot of DISCORD_BOT_TOKEN and an account `support`
 * from SWITCHBOARD_CONFIG's `accounts`, each on its own Discord emulator (a bot sees only its own
 * DMs and servers, as on Discord), both with tokens shaped as Discord's (the bot's id in base64
 * first), which is how the gateway knows each account's id before it logs in. Every reply leaves
 * through the bot that received its message, and a reply queued for a removed account fails.
 * Composed in this process on the real clock.
 */

import { describe, expect, test } from "bun:test";
import { type DiscordEmulator, discordBotToken, startDiscordEmulator } from "../emulators/discord/index.ts";
import * as accounts from "./support/accounts.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";

const PERSONAL_ID = "111111111111111111";
const SUPPORT_ID = "222222222222222222";
const fixture = useE2eFixture("switchboard-e2e-accounts-dc-", () =>
  startDiscordEmulator({ botId: PERSONAL_ID, token: discordBotToken(PERSONAL_ID) }),
);
const { dir, llm, platform: personal } = fixture;
const support = startDiscordEmulator({ botId: SUPPORT_ID, token: discordBotToken(SUPPORT_ID) });
accounts.closeAfterAll(support);

/** Alice writes to both bots; Bob only to the support bot, which admits everyone. */
const aliceOfPersonal = personal.createUser("alice");
const aliceOfSupport = support.createUser("alice");
const bobOfPersonal = personal.createUser("bob");

function env(withSupport: boolean): Record<string, string> {
  const configFile = accounts.writeSupportConfig(dir.path, "discord", withSupport, {
    token: "${DC_SUPPORT}",
    apiUrl: support.apiUrl,
    allowedUsers: "*",
  });
  return discordGatewayEnv(fixture, {
    allowed: [aliceOfPersonal.id],
    extra: { SWITCHBOARD_CONFIG: configFile, DC_SUPPORT: support.token },
  });
}

const botTexts = (bot: DiscordEmulator, userId: string) =>
  bot
    .visibleMessages(bot.dmChannelId(userId))
    .filter((m) => m.author.id === bot.bot.id)
    .map((m) => m.content);

async function say(bot: DiscordEmulator, userId: string, text: string): Promise<void> {
  bot.sendDm(userId, text);
  await accounts.replyThrough(bot, () => botTexts(bot, userId), `echo: ${text}`, `bot ${bot.bot.id}`);
}

const gateways = accounts.oneGatewayAtATime();
const start = (withSupport: boolean) => gateways.start(env(withSupport));

describe("two Discord bots in one gateway", () => {
  test("each bot answers only through itself, by its own allow list, with its own readiness line and binding", async () => {
    const gateway = await start(true);
    await say(personal, aliceOfPersonal.id, "hello personal bot");
    await say(support, aliceOfSupport.id, "hello support bot");
    expect(botTexts(personal, aliceOfPersonal.id)).toEqual(["echo: hello personal bot"]);
    expect(botTexts(support, aliceOfSupport.id)).toEqual(["echo: hello support bot"]);
    // Neither bot sent anything through the other's API.
    expect(personal.restCalls.some((c) => c.body && JSON.stringify(c.body).includes("support bot"))).toBe(
      false,
    );
    expect(support.restCalls.some((c) => c.body && JSON.stringify(c.body).includes("personal bot"))).toBe(
      false,
    );

    // Bob is not on the personal bot's list.
    personal.sendDm(bobOfPersonal.id, "bob asks the personal bot");
    await accounts.refusedSender(gateway, "the personal bot to refuse bob");
    expect(botTexts(personal, bobOfPersonal.id)).toEqual([]);

    await accounts.expectServing(gateway, "discord", ["support"]);
    accounts.expectBoundOnly(llm, accounts.SUPPORT_INSTRUCTIONS, "hello support bot", "hello personal bot");
  }, 60_000);

  test("after a restart each bot goes on with its own conversation, and a schedule made through each fires through it", async () => {
    await start(true);
    await say(personal, aliceOfPersonal.id, "personal after restart");
    await say(support, aliceOfSupport.id, "support after restart");
    accounts.expectOwnHistories(
      llm,
      ["support after restart", "hello support bot"],
      ["personal after restart", "hello personal bot"],
    );

    personal.sendDm(aliceOfPersonal.id, "/in 1s remind via personal");
    support.sendDm(aliceOfSupport.id, "/in 1s remind via support");
    const scheduled = (bot: DiscordEmulator, userId: string, text: string) =>
      bot.waitFor(
        () =>
          // Discord markdown escapes the brackets.
          botTexts(bot, userId).some((t) => t.startsWith("echo: \\[Scheduled prompt") && t.includes(text)),
        20_000,
        `the scheduled "${text}"`,
      );
    await scheduled(personal, aliceOfPersonal.id, "remind via personal");
    await scheduled(support, aliceOfSupport.id, "remind via support");
    expect(botTexts(personal, aliceOfPersonal.id).join("\n")).not.toContain("via support");
    expect(botTexts(support, aliceOfSupport.id).join("\n")).not.toContain("via personal");
  }, 60_000);

  test("a reply queued for a removed account fails naming it; the other bot never sends it", async () => {
    const withSupport = await start(true);
    support.failNext("POST /channels/:id/messages", { kind: "server_error", status: 502 }, 1000);
    support.sendDm(aliceOfSupport.id, "stranded reply");
    const { failed } = await accounts.strandedReply(withSupport, "stranded reply", SUPPORT_ID, () =>
      start(false),
    );
    expect(failed.lastError).toContain(`discord account ${SUPPORT_ID}`);
    expect(failed.lastError).toContain("not configured any more");
    expect(botTexts(personal, aliceOfPersonal.id).join("\n")).not.toContain("stranded reply");
    support.clearFaults();
    await say(personal, aliceOfPersonal.id, "personal without support");
  }, 60_000);
});
