/**
 * A user of two Telegram bots in one gateway is two principals: paired with the bot `support` (an
 * account of SWITCHBOARD_CONFIG's `accounts`) they are not paired with the `default` bot, and a
 * budget they used up on one bot leaves their budget on the other untouched. Pairing is approved
 * with the operator CLI on the SQLite file; the gateway is composed in this process.
 */

import { describe, expect, test } from "bun:test";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import * as accounts from "./support/accounts.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";

const TIMEOUT = 20_000;
const fixture = useE2eFixture("switchboard-e2e-accounts-principals-", startTelegramEmulator);
const { dir, llm, platform: personal } = fixture;
const support = accounts.addTelegramSupportBot(personal);
const botTexts = accounts.telegramBotTexts;
const mallory = user(4102, "Mallory");
const alice = user(4101, "Alice");
/** Spends of 400 tokens: after three (1,200) a day's 1,000 is used up, and the fourth is refused. */
const TOKENS_PER_DAY = 1000;

const configFile = accounts.writeConfig(dir.path, "accounts.json", "telegram", {
  more: { budgets: { perUser: { tokensPerDay: TOKENS_PER_DAY } } },
  accounts: {
    support: { token: "${TG_SUPPORT}", apiRoot: personal.url, allowedUsers: ["pairing", alice.id] },
  },
});
const env = () =>
  telegramGatewayEnv(fixture, {
    allowed: ["pairing", alice.id],
    extra: { SWITCHBOARD_CONFIG: configFile, TG_SUPPORT: accounts.TELEGRAM_SUPPORT_TOKEN },
  });
const cliEnv = () => ({ SWITCHBOARD_DB: env().SWITCHBOARD_DB! });

type Bot = typeof personal;

async function reply(bot: Bot, from: typeof alice, text: string, contains: string): Promise<string> {
  const before = botTexts(bot, from.id).length;
  bot.incoming({ chat: privateChat(from), from, text });
  return (
    await bot.waitForMessage(
      from.id,
      (m) => m.fromBot && m.visibleText.includes(contains) && botTexts(bot, from.id).length > before,
      TIMEOUT,
    )
  ).visibleText;
}

const gateways = accounts.oneGatewayAtATime({ pacing: "platform" });

describe("a user of two bots is two principals", () => {
  test("paired with the support bot, a user is not paired with the default bot", async () => {
    await gateways.start(env());
    const asked = await reply(support, mallory, "hello support", "pairing code is");
    const code = /pairing code is ([A-Z0-9]{8})/.exec(asked)![1]!;
    const grant = await runCliJson<{ channel: string; userId: string }>(
      ["access", "approve", code],
      cliEnv(),
    );
    expect(grant).toMatchObject({ channel: "telegram:support", userId: String(mallory.id) });
    await reply(support, mallory, "now may I?", "echo: now may I?");

    // The default bot does not know her: she gets a code of its own, and the model is not reached.
    const other = await reply(personal, mallory, "hello personal", "pairing code is");
    expect(/pairing code is ([A-Z0-9]{8})/.exec(other)![1]).not.toBe(code);
    expect(llm.requestsContaining("hello personal")).toEqual([]);

    const listed = await runCliJson<{
      grants: Array<{ channel: string }>;
      pending: Array<{ channel: string }>;
    }>(["access", "list"], cliEnv());
    expect(listed.grants.map((g) => g.channel)).toEqual(["telegram:support"]);
    expect(listed.pending.map((p) => p.channel)).toEqual(["telegram"]);

    // Revoking the support bot's grant names the account as `access list` shows it.
    expect(
      (await runCli(["access", "revoke", "telegram:support", String(mallory.id)], cliEnv())).exitCode,
    ).toBe(0);
    await reply(support, mallory, "still there?", "pairing code is");
  }, 60_000);

  test("a budget used up on one bot leaves the user's budget on the other", async () => {
    llm.addRules(
      Array.from({ length: 4 }, (_, i) => ({
        match: { lastUserContains: `spend #${i + 1}.` },
        reply: {
          kind: "text" as const,
          text: `spent #${i + 1}.`,
          usage: { promptTokens: 350, completionTokens: 50 },
        },
      })),
    );
    await reply(support, alice, "spend #1.", "spent #1.");
    await reply(support, alice, "spend #2.", "spent #2.");
    await reply(support, alice, "spend #3.", "spent #3.");
    const refused = await reply(support, alice, "spend #4.", "is used up");
    expect(refused).not.toContain("spent #4.");
    expect(llm.requestsContaining("spend #4.")).toEqual([]);
    // Through the default bot she has her whole budget.
    await reply(personal, alice, "spend #4.", "spent #4.");
    const status = await runCliJson<unknown>(["budgets", "status", `user:telegram:support:${alice.id}`], {
      ...cliEnv(),
      SWITCHBOARD_CONFIG: configFile,
    });
    expect(status).toMatchObject({ refused: true, limits: [{ field: "tokensPerDay", used: 1200 }] });
    const home = await runCliJson<unknown>(["budgets", "status", `user:telegram:${alice.id}`], {
      ...cliEnv(),
      SWITCHBOARD_CONFIG: configFile,
    });
    expect(home).toMatchObject({ refused: false, limits: [{ field: "tokensPerDay", used: 400 }] });
  }, 60_000);
});
