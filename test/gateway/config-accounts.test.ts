import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { accountNameOf } from "../../src/gateway/binding-facts.ts";
import { buildChannels } from "../../src/gateway/channel-adapters.ts";
import { systemClock } from "../../src/util/clock.ts";
import { silentLogger } from "../../src/util/log.ts";
import { configWith } from "./support/config.ts";

const PERSONAL = "111111111:AAPersonalTokenForTests_abcdefghijk";
const SUPPORT = "222222222:AASupportTokenForTests_abcdefghijkl";
const DEFAULT_BOT = "333333333:AADefaultTokenForTests_abcdefghijk";

const accounts = (telegram: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
  version: 1,
  accounts: { telegram },
  ...more,
});

/** A config file with the one account `name` of `channel`. */
const oneAccount = (channel: string, name: string, settings: Record<string, unknown>) => ({
  version: 1,
  accounts: { [channel]: { [name]: settings } },
});

/** The Matrix account `support` on https://matrix.example.org, its token from MX_SUPPORT, with `settings`. */
const matrixSupport = (settings: Record<string, unknown>) =>
  oneAccount("matrix", "support", {
    homeserverUrl: "https://matrix.example.org",
    accessToken: "${MX_SUPPORT}",
    ...settings,
  });

/** The config_invalid error loadConfig throws for `env` and the file. */
function refusal(env: Record<string, string>, fileJson: unknown) {
  try {
    configWith(env, fileJson);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error;
    throw error;
  }
  throw new Error("expected config_invalid");
}

describe("accounts in SWITCHBOARD_CONFIG", () => {
  test("each account is read by the Telegram schema, its ${VAR}s expanded and kept as secrets", () => {
    const config = configWith(
      { TG_PERSONAL: PERSONAL, TG_SUPPORT: SUPPORT, TELEGRAM_BOT_TOKEN: DEFAULT_BOT },
      accounts({
        personal: { token: "${TG_PERSONAL}" },
        support: { token: "${TG_SUPPORT}", allowedUsers: "*", groupSessions: "per-user" },
      }),
    );
    expect(config.accounts.map(({ name, accountId }) => [name, accountId])).toEqual([
      ["personal", "111111111"],
      ["support", "222222222"],
    ]);
    expect(config.accounts[0]!.settings).toMatchObject({ mode: "polling", token: PERSONAL });
    expect(config.accounts[0]!.allowList).toEqual({ kind: "ids", ids: new Set() });
    expect(config.accounts[1]!.settings).toMatchObject({ groupSessions: "per-user" });
    expect(config.accounts[1]!.allowList).toEqual({ kind: "everyone" });
    expect(config.secrets).toEqual(expect.arrayContaining([PERSONAL, SUPPORT, DEFAULT_BOT]));
    // Binding facts name each bot by its account; the variables' bot is `default`.
    expect(accountNameOf(config.file, "telegram", "222222222")).toBe("support");
    expect(accountNameOf(config.file, "telegram", "333333333")).toBe("default");
    expect(accountNameOf(config.file, "telegram", "999999999")).toBe("999999999");
    expect(accountNameOf(config.file, "discord", "42")).toBe("default");
  });

  test("each account is its own adapter, by slot, with its own allow list", () => {
    const config = configWith(
      { TG_SUPPORT: SUPPORT, TELEGRAM_BOT_TOKEN: DEFAULT_BOT, TELEGRAM_ALLOWED_USERS: "42" },
      accounts({ support: { token: "${TG_SUPPORT}", allowedUsers: ["7", "8"] } }),
    );
    const built = buildChannels(config, { clock: systemClock, logger: silentLogger });
    expect([...built.adapters.keys()]).toEqual(["telegram", "telegram:support"]);
    expect(built.adapters.get("telegram")!.account).toBe("333333333");
    expect(built.adapters.get("telegram:support")!.account).toBe("222222222");
    expect(built.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(["42"]) });
    expect([...built.accountAllowLists.values()]).toEqual([{ kind: "ids", ids: new Set(["7", "8"]) }]);
  });

  test("a webhook account gets its own route, /telegram/webhook/<account>", () => {
    const config = configWith(
      { TG_SUPPORT: SUPPORT, TG_SUPPORT_SECRET: "s3cret-webhook-value-0123456789" },
      accounts({
        support: {
          token: "${TG_SUPPORT}",
          mode: "webhook",
          webhookUrl: "https://bot.example.com/telegram/webhook/support",
          webhookSecret: "${TG_SUPPORT_SECRET}",
        },
      }),
    );
    expect(config.accounts[0]!.settings).toMatchObject({
      mode: "webhook",
      webhookPath: "/telegram/webhook/support",
    });
    const built = buildChannels(config, { clock: systemClock, logger: silentLogger });
    expect(built.adapters.get("telegram:support")!.routes!().map((route) => route.path)).toEqual([
      "/telegram/webhook/support",
    ]);
  });

  test("an account on the default bot's webhook route is refused", () => {
    const secret = "s3cret-webhook-value-0123456789";
    const config = configWith(
      {
        TELEGRAM_BOT_TOKEN: DEFAULT_BOT,
        TELEGRAM_MODE: "webhook",
        TELEGRAM_WEBHOOK_URL: "https://bot.example.com/telegram/webhook/support",
        TELEGRAM_WEBHOOK_SECRET: secret,
        TG_SUPPORT: SUPPORT,
        SECRET: secret,
      },
      accounts({
        support: {
          token: "${TG_SUPPORT}",
          mode: "webhook",
          webhookUrl: "https://bot.example.com/telegram/webhook/support",
          webhookSecret: "${SECRET}",
        },
      }),
    );
    expect(() => buildChannels(config, { clock: systemClock, logger: silentLogger })).toThrow(
      "gives telegram:support the webhook route /telegram/webhook/support, which telegram already has",
    );
  });

  test("bindings may name the configured accounts; an unknown account refuses the start", () => {
    const env = { TG_SUPPORT: SUPPORT };
    const binding = (account: string) => ({
      bindings: [{ match: { channel: "telegram", account }, instructions: "Support." }],
    });
    expect(() =>
      configWith(env, accounts({ support: { token: "${TG_SUPPORT}" } }, binding("support"))),
    ).not.toThrow();
    const error = refusal(env, accounts({ support: { token: "${TG_SUPPORT}" } }, binding("sales")));
    expect(error.message).toContain(
      'bindings.0.match.account: "sales" is not an account of telegram; accounts: default, support',
    );
  });

  const invalid: Array<[string, Record<string, string>, Record<string, unknown>, string]> = [
    [
      "an unset variable",
      {},
      { support: { token: "${TG_SUPPORT}" } },
      "accounts.telegram.support.token refers to ${TG_SUPPORT}, which is unset",
    ],
    [
      "a token written in the file",
      {},
      { support: { token: SUPPORT } },
      "accounts.telegram.support.token holds a secret, so it must be a ${VAR} reference",
    ],
    [
      "a malformed token",
      { TG_SUPPORT: "not-a-token" },
      { support: { token: "${TG_SUPPORT}" } },
      "accounts.telegram.support.token: must be the bot token from @BotFather",
    ],
    [
      "an unknown key",
      { TG_SUPPORT: SUPPORT },
      { support: { token: "${TG_SUPPORT}", pollTimeout: 3 } },
      "accounts.telegram.support.pollTimeout, which a Telegram account does not have",
    ],
    [
      "a bad name",
      { TG_SUPPORT: SUPPORT },
      { "Support Bot": { token: "${TG_SUPPORT}" } },
      "an account name is lowercase letters",
    ],
    [
      "the name default",
      { TG_SUPPORT: SUPPORT },
      { default: { token: "${TG_SUPPORT}" } },
      "accounts.telegram.default",
    ],
    [
      "one bot twice",
      { TG_A: SUPPORT, TG_B: SUPPORT },
      { a: { token: "${TG_A}" }, b: { token: "${TG_B}" } },
      "accounts.telegram.b, which is the same telegram bot (222222222) as the account a",
    ],
    [
      "a webhook URL off its route",
      { TG_SUPPORT: SUPPORT, SECRET: "s3cret-webhook-value-0123456789" },
      {
        support: {
          token: "${TG_SUPPORT}",
          mode: "webhook",
          webhookUrl: "https://bot.example.com/hook",
          webhookSecret: "${SECRET}",
        },
      },
      "accounts.telegram.support.webhookUrl must end in /telegram/webhook/support",
    ],
    [
      "a bad allow list",
      { TG_SUPPORT: SUPPORT },
      { support: { token: "${TG_SUPPORT}", allowedUsers: "alice" } },
      'accounts.telegram.support.allowedUsers has "alice", which is not a user id',
    ],
  ];
  for (const [what, env, telegram, message] of invalid)
    test(`refused (config_invalid, exit 78), naming the key: ${what}`, () => {
      const error = refusal(env, accounts(telegram));
      expect(error.message).toContain(message);
      // No message carries a secret's value.
      for (const value of Object.values(env)) expect(error.message).not.toContain(value);
    });

  test("the same bot as TELEGRAM_BOT_TOKEN's is refused", () => {
    const error = refusal(
      { TELEGRAM_BOT_TOKEN: SUPPORT, TG_SUPPORT: SUPPORT },
      accounts({ support: { token: "${TG_SUPPORT}" } }),
    );
    expect(error.message).toContain("the same telegram bot (222222222) as the account default");
    expect(error.message).not.toContain(SUPPORT);
  });

  test("accounts of a channel that has one account so far are refused", () => {
    const error = refusal({}, { version: 1, accounts: { api: { main: { token: "${API_MAIN}" } } } });
    expect(error.message).toContain("has accounts.api, but api has one account so far");
    expect(error.message).toContain("named accounts exist for telegram, discord, slack, whatsapp, matrix");
  });
});

/** A token shaped as Discord's: the bot's user id in base64 first. */
const discordToken = (id: string) =>
  `${Buffer.from(id).toString("base64").replace(/=+$/, "")}.GhTsAA.hmac-part-${id}`;

describe("Discord and Matrix accounts", () => {
  test("a Discord account's id is its token's first part; the file section and allowBots apply", () => {
    const main = discordToken("123456789012345678");
    const config = configWith(
      { DISCORD_BOT_TOKEN: discordToken("876543210987654321"), DC_MAIN: main },
      {
        version: 1,
        allowBots: true,
        discord: { groupSessions: "per-user" },
        accounts: { discord: { main: { token: "${DC_MAIN}", commandsGuildId: "42", allowedUsers: "*" } } },
      },
    );
    expect(config.accounts[0]).toMatchObject({ name: "main", accountId: "123456789012345678" });
    expect(config.accounts[0]!.settings).toMatchObject({
      token: main,
      commandsGuildId: "42",
      groupSessions: "per-user",
      allowBots: true,
    });
    expect(accountNameOf(config.file, "discord", "123456789012345678")).toBe("main");
    expect(accountNameOf(config.file, "discord", "876543210987654321")).toBe("default");
    const built = buildChannels(config, { clock: systemClock, logger: silentLogger });
    // Known before start, from the token: a reply queued for it routes to it at once.
    expect(built.adapters.get("discord:main")!.account).toBe("123456789012345678");
    expect(config.secrets).toContain(main);
  });

  test("a Discord token that does not carry the bot's id, an unknown key and a repeated bot are refused", () => {
    const notAToken = "not-a-discord-token-value";
    const shapeless = refusal(
      { DC_MAIN: notAToken },
      { version: 1, accounts: { discord: { main: { token: "${DC_MAIN}" } } } },
    );
    expect(shapeless.message).toContain("accounts.discord.main.token, which is not a Discord bot token");
    expect(shapeless.message).not.toContain(notAToken);
    const unknown = refusal(
      { DC_MAIN: discordToken("123456789012345678") },
      { version: 1, accounts: { discord: { main: { token: "${DC_MAIN}", mode: "webhook" } } } },
    );
    expect(unknown.message).toContain("accounts.discord.main.mode, which a discord account does not have");
    const token = discordToken("123456789012345678");
    const repeated = refusal(
      { DISCORD_BOT_TOKEN: token, DC_MAIN: token },
      { version: 1, accounts: { discord: { main: { token: "${DC_MAIN}" } } } },
    );
    expect(repeated.message).toContain("the same discord bot (123456789012345678) as the account default");
    // The variables' bot beside named accounts must tell its id too (an emulator's token does not).
    const unnamed = refusal(
      { DISCORD_BOT_TOKEN: "emulated-discord-token", DC_MAIN: token },
      { version: 1, accounts: { discord: { main: { token: "${DC_MAIN}" } } } },
    );
    expect(unnamed.message).toContain(
      "the discord account default (the DISCORD_* variables) does not tell its bot's id",
    );
  });

  test("a Matrix account names its user, joins rooms for its own allowedUsers and keys its conversations by it", () => {
    const config = configWith(
      {
        MATRIX_HOMESERVER_URL: "https://matrix.example.org",
        MATRIX_ACCESS_TOKEN: "syt_default_token",
        MATRIX_USER_ID: "@bot:example.org",
        MX_SUPPORT: "syt_support_token",
      },
      matrixSupport({ userId: "@support:example.org", allowedUsers: ["@alice:example.org"] }),
    );
    expect(config.accounts[0]).toMatchObject({ name: "support", accountId: "@support:example.org" });
    expect(config.accounts[0]!.settings).toMatchObject({
      accessToken: "syt_support_token",
      invites: { kind: "users", ids: ["@alice:example.org"] },
      accountKeys: true,
    });
    expect(config.secrets).toContain("syt_support_token");
    const withoutUser = refusal({ MX_SUPPORT: "syt_support_token" }, matrixSupport({}));
    expect(withoutUser.message).toContain("accounts.matrix.support without userId");
    const defaultWithoutUser = refusal(
      {
        MATRIX_HOMESERVER_URL: "https://matrix.example.org",
        MATRIX_ACCESS_TOKEN: "syt_default_token",
        MX_SUPPORT: "syt_support_token",
      },
      matrixSupport({ userId: "@support:example.org" }),
    );
    expect(defaultWithoutUser.message).toContain("set MATRIX_USER_ID");
  });
});

describe("Slack and WhatsApp accounts", () => {
  const SLACK_ENV = {
    SL_ACME_BOT: "xoxb-2-acme",
    SL_ACME_SIGNING: "acme-signing-secret",
    SL_BETA_APP: "xapp-1-beta",
  };
  /** The WhatsApp account `sales` on phone number id 100000000000002, with `settings`. */
  const whatsappSales = (settings: Record<string, unknown>) =>
    oneAccount("whatsapp", "sales", { phoneNumberId: "100000000000002", ...settings });

  test("a Slack account over HTTP gets /slack/events/<name>, one with appToken Socket Mode; its id is team:app", () => {
    const config = configWith(SLACK_ENV, {
      version: 1,
      allowBots: true,
      accounts: {
        slack: {
          acme: {
            botToken: "${SL_ACME_BOT}",
            signingSecret: "${SL_ACME_SIGNING}",
            teamId: "T0ACME",
            appId: "A0ACME",
          },
          beta: { botToken: "${SL_ACME_BOT}", appToken: "${SL_BETA_APP}", teamId: "T0BETA", appId: "A0BETA" },
        },
      },
    });
    expect(config.accounts[0]).toMatchObject({ name: "acme", accountId: "T0ACME:A0ACME" });
    expect(config.accounts[0]!.settings).toMatchObject({
      mode: "http",
      eventsPath: "/slack/events/acme",
      allowOtherBots: true,
    });
    expect(config.accounts[1]).toMatchObject({ name: "beta", accountId: "T0BETA:A0BETA" });
    expect(config.accounts[1]!.settings).toMatchObject({ mode: "socket", appToken: "xapp-1-beta" });
    expect(config.secrets).toEqual(expect.arrayContaining(Object.values(SLACK_ENV)));
    const built = buildChannels(config, { clock: systemClock, logger: silentLogger });
    expect(built.adapters.get("slack:acme")!.account).toBe("T0ACME:A0ACME");
    expect(
      built.adapters
        .get("slack:acme")!
        .routes?.()
        .map((r) => r.path),
    ).toEqual(["/slack/events/acme"]);
  });

  test("a Slack account without teamId and appId, or without a way in, is refused; so is a default without its ids", () => {
    const noIds = refusal(
      SLACK_ENV,
      oneAccount("slack", "acme", { botToken: "${SL_ACME_BOT}", signingSecret: "${SL_ACME_SIGNING}" }),
    );
    expect(noIds.message).toContain("accounts.slack.acme without teamId and appId");
    const noWayIn = refusal(
      SLACK_ENV,
      oneAccount("slack", "acme", { botToken: "${SL_ACME_BOT}", teamId: "T0ACME", appId: "A0ACME" }),
    );
    expect(noWayIn.message).toContain("without appToken (Socket Mode) or signingSecret");
    const defaultWithoutIds = refusal(
      { ...SLACK_ENV, SLACK_BOT_TOKEN: "xoxb-1-home", SLACK_APP_TOKEN: "xapp-1-home" },
      oneAccount("slack", "acme", {
        botToken: "${SL_ACME_BOT}",
        signingSecret: "${SL_ACME_SIGNING}",
        teamId: "T0ACME",
        appId: "A0ACME",
      }),
    );
    expect(defaultWithoutIds.message).toContain("set SLACK_TEAM_ID and SLACK_APP_ID");
    expect(defaultWithoutIds.message).not.toContain("acme-signing-secret");
  });

  test("WhatsApp accounts are read by the WhatsApp schema, named by their phone number id", () => {
    const config = configWith(
      { WA_TOKEN: "EAAGsalesToken", WA_SECRET: "app-secret-value", WA_VERIFY: "verify-token-value" },
      whatsappSales({
        accessToken: "${WA_TOKEN}",
        appSecret: "${WA_SECRET}",
        verifyToken: "${WA_VERIFY}",
        allowedUsers: ["4915112345678"],
      }),
    );
    expect(config.accounts[0]).toMatchObject({ name: "sales", accountId: "100000000000002" });
    expect(config.secrets).toEqual(
      expect.arrayContaining(["EAAGsalesToken", "app-secret-value", "verify-token-value"]),
    );
    const literal = refusal(
      {},
      whatsappSales({ accessToken: "EAAGwrittenIntoTheFile", appSecret: "x", verifyToken: "y" }),
    );
    expect(literal.message).toContain("accounts.whatsapp.sales.accessToken holds a secret");
    expect(literal.message).not.toContain("EAAGwrittenIntoTheFile");
  });
});
