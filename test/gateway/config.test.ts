import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { DEFAULT_SURFACES, loadConfig, redactSecrets, surfacePolicy } from "../../src/gateway/config.ts";
import { configWith, fileConfig } from "./support/config.ts";

/** The config_invalid error loadConfig throws for `env` (and an optional config file). */
function refusal(env: Record<string, string>, fileJson?: unknown) {
  try {
    configWith(env, fileJson);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error;
    throw error;
  }
  throw new Error(`expected config_invalid for ${JSON.stringify(env)}`);
}

describe("loadConfig: the environment", () => {
  test("nothing set: SQLite, loopback, the web chat and no platform", () => {
    const config = loadConfig({});
    expect(config.database).toEqual({ engine: "sqlite", path: "./data/switchboard.sqlite" });
    expect(config.http).toEqual({ host: "127.0.0.1", port: 8787, publicUrl: null });
    expect(config).toMatchObject({
      logLevel: "info",
      operatorToken: null,
      timezone: "UTC",
      shutdownGraceMs: 10_000,
      ambiguousHoldMs: 300_000,
      telegram: null,
      discord: null,
      slack: null,
      secrets: [],
    });
    expect(config.web.enabled).toBe(true);
  });

  test("each bad value names its variable, the problem and an example", () => {
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ SWITCHBOARD_HTTP_PORT: "70000" }, "SWITCHBOARD_HTTP_PORT", "Example: SWITCHBOARD_HTTP_PORT=8787"],
      [{ SWITCHBOARD_LOG_LEVEL: "loud" }, "SWITCHBOARD_LOG_LEVEL", 'got "loud"'],
      [{ SWITCHBOARD_SHUTDOWN_GRACE_MS: "1.5" }, "SWITCHBOARD_SHUTDOWN_GRACE_MS", "whole number"],
      [{ SWITCHBOARD_AMBIGUOUS_HOLD_MS: "-1" }, "SWITCHBOARD_AMBIGUOUS_HOLD_MS", '"forever"'],
      [{ SWITCHBOARD_OPERATOR_TOKEN: "short" }, "SWITCHBOARD_OPERATOR_TOKEN", "at least 16 characters"],
      [{ SWITCHBOARD_TIMEZONE: "Mars/Olympus" }, "SWITCHBOARD_TIMEZONE", "IANA time zone"],
      [{ SWITCHBOARD_WEB: "maybe" }, "SWITCHBOARD_WEB", "on or off"],
      [{ SWITCHBOARD_STANDBY: "on" }, "SWITCHBOARD_STANDBY", "needs SWITCHBOARD_DATABASE_URL"],
      [{ SWITCHBOARD_DATABASE_URL: "mysql://h/db" }, "SWITCHBOARD_DATABASE_URL", "postgres://"],
      [
        { SWITCHBOARD_DATABASE_URL: "postgres://h/db", SWITCHBOARD_DB: "./x.sqlite" },
        "SWITCHBOARD_DATABASE_URL",
        "not both",
      ],
      [{ TELEGRAM_BOT_TOKEN: "123:abc", TELEGRAM_MODE: "push" }, "TELEGRAM_MODE", "polling or webhook"],
      [{ TELEGRAM_BOT_TOKEN: "123:abc", TELEGRAM_MODE: "webhook" }, "TELEGRAM_WEBHOOK_URL", "must be set"],
      [
        { TELEGRAM_BOT_TOKEN: "123:abc", TELEGRAM_ALLOWED_USERS: "12, bob smith" },
        "TELEGRAM_ALLOWED_USERS",
        '"bob smith", which is not a user id',
      ],
      [{ DISCORD_BOT_TOKEN: "d-token", DISCORD_API_URL: "ftp://x" }, "DISCORD_API_URL", "http(s) URL"],
      [{ SLACK_BOT_TOKEN: "xoxb-1" }, "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"],
    ];
    for (const [env, variable, fragment] of cases) {
      const error = refusal(env);
      expect(error.details).toEqual({ variable });
      expect(error.message.startsWith(variable)).toBe(true);
      expect(error.message).toContain(fragment);
      expect(error.message).toContain("Example:");
    }
  });

  test("platforms: Telegram webhook, Discord, and Slack's mode from which secret is set", () => {
    const config = loadConfig({
      TELEGRAM_BOT_TOKEN: "123:telegram-token",
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_URL: "https://bot.example.com/hooks/tg/",
      TELEGRAM_WEBHOOK_SECRET: "webhook-secret-1",
      TELEGRAM_ALLOWED_USERS: "12, 34",
      DISCORD_BOT_TOKEN: "discord-token",
      DISCORD_ALLOWED_USERS: "*",
      SLACK_BOT_TOKEN: "xoxb-slack-token",
      SLACK_SIGNING_SECRET: "signing-secret",
      SLACK_API_URL: "http://127.0.0.1:3001/api/",
    });
    expect(config.telegram).toMatchObject({
      mode: "webhook",
      webhookUrl: "https://bot.example.com/hooks/tg",
      webhookPath: "/hooks/tg",
      allowed: { kind: "ids", ids: new Set(["12", "34"]) },
    });
    expect(config.discord?.allowed).toEqual({ kind: "everyone" });
    expect(config.slack).toMatchObject({ mode: "http", apiUrl: "http://127.0.0.1:3001/api/" });
    expect(config.slack?.allowed).toEqual({ kind: "ids", ids: new Set() });
    expect(loadConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1" }).slack?.mode).toBe("socket");
  });

  test("every secret is collected for redaction, the database password included", () => {
    const env = {
      TELEGRAM_BOT_TOKEN: "123:telegram-token",
      SLACK_BOT_TOKEN: "xoxb-slack-token",
      SLACK_APP_TOKEN: "xapp-app-token",
      OPENROUTER_API_KEY: "sk-or-key",
      SWITCHBOARD_OPERATOR_TOKEN: "operator-token-0123456789",
      SWITCHBOARD_DATABASE_URL: "postgres://sb:p%40ss-word@db/switchboard",
    };
    const { secrets } = loadConfig(env);
    for (const value of [
      "123:telegram-token",
      "xoxb-slack-token",
      "xapp-app-token",
      "sk-or-key",
      "operator-token-0123456789",
      "p@ss-word",
    ]) {
      expect(secrets).toContain(value);
    }
    expect(redactSecrets("token 123:telegram-token and sk-or-key", env)).toBe(
      "token [redacted] and [redacted]",
    );
  });
});

describe("loadConfig: the SWITCHBOARD_CONFIG file", () => {
  test("a valid file: surfaces, allowBots and per-platform settings", () => {
    const file = fileConfig({
      allowBots: true,
      surfaces: { "telegram:group": { inputPolicy: "supersede" } },
      telegram: { editedMessages: "new-input" },
    });
    expect(file).toMatchObject({ allowBots: true, telegram: { editedMessages: "new-input" }, discord: {} });
  });

  test("refusals name the file and the field", () => {
    expect(refusal({}, { version: 2 }).message).toContain("version: must be 1 (got 2)");
    expect(refusal({}, "{not json").message).toContain("is not valid JSON");
    expect(refusal({}, { version: 1, surfaces: { "irc:dm": {} } }).message).toContain(
      '"irc:dm" is not a valid key: a surface key is "<channel>:<surface>" with channel telegram, discord, slack, web or *',
    );
    expect(refusal({}, { version: 1, surfaces: { "slack:thread": { delivery: "fax" } } }).message).toContain(
      "surfaces.slack:thread.delivery",
    );
    expect(refusal({}, { version: 1, colour: "blue" }).message).toContain("colour");
    expect(refusal({ SWITCHBOARD_CONFIG: "/nonexistent/switchboard.json" }).message).toContain(
      "does not exist",
    );
  });

  test("instructions: the environment wins over the file", () => {
    expect(configWith({}, { version: 1, instructions: "from the file" }).instructions).toBe("from the file");
    expect(
      configWith({ SWITCHBOARD_INSTRUCTIONS: "from env" }, { version: 1, instructions: "from the file" })
        .instructions,
    ).toBe("from env");
  });
});

describe("surfacePolicy", () => {
  test("defaults: supersede and stream in DMs, queue and terminal with a mention elsewhere", () => {
    const file = fileConfig();
    expect(surfacePolicy(file, "telegram", "dm")).toEqual(DEFAULT_SURFACES.dm);
    expect(surfacePolicy(file, "slack", "thread")).toEqual(DEFAULT_SURFACES.thread);
    expect(DEFAULT_SURFACES.dm).toMatchObject({ inputPolicy: "supersede", delivery: "stream" });
    expect(DEFAULT_SURFACES.group).toMatchObject({ inputPolicy: "queue", requireMention: true });
  });

  test("overrides stack: *:surface, then channel:*, then channel:surface, field by field", () => {
    const file = fileConfig({
      surfaces: {
        "*:group": { inputPolicy: "inject", instructions: "be brief" },
        "discord:*": { delivery: "stream", inputPolicy: "interrupt" },
        "discord:group": { requireMention: false, messagesPerMinute: 5 },
      },
    });
    expect(surfacePolicy(file, "discord", "group")).toEqual({
      inputPolicy: "interrupt",
      delivery: "stream",
      requireMention: false,
      nativeStreaming: false,
      messagesPerMinute: 5,
      instructions: "be brief",
    });
    expect(surfacePolicy(file, "telegram", "group")).toMatchObject({
      inputPolicy: "inject",
      delivery: "terminal",
    });
    expect(surfacePolicy(file, "discord", "dm")).toMatchObject({
      inputPolicy: "interrupt",
      delivery: "stream",
    });
  });
});
