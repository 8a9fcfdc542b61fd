import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import {
  DEFAULT_SURFACES,
  loadConfig,
  redactSecrets,
  surfacePolicy,
} from "../../src/gateway/config/index.ts";
import { configWith, fileConfig } from "./support/config.ts";

/** Shaped as @BotFather's tokens are (`<bot id>:<secret>`), which the Telegram module checks. */
const TELEGRAM_TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11";

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
      idleCollection: true,
      ambiguousHoldMs: 300_000,
      channels: {},
      allowLists: {},
      secrets: [],
    });
    expect(config.web.enabled).toBe(true);
  });

  test("memory settings: SQLite's page cache in MiB, and the idle collection on or off", () => {
    expect(loadConfig({ SWITCHBOARD_SQLITE_CACHE_MB: "64" }).database).toEqual({
      engine: "sqlite",
      path: "./data/switchboard.sqlite",
      cacheBytes: 64 * 1024 * 1024,
    });
    expect(loadConfig({ SWITCHBOARD_IDLE_GC: "off" }).idleCollection).toBe(false);
    for (const bad of ["0", "1.5", "lots"]) {
      const error = refusal({ SWITCHBOARD_SQLITE_CACHE_MB: bad });
      expect(error.message).toContain(
        "SWITCHBOARD_SQLITE_CACHE_MB must be a whole number of MiB from 1 to 4096",
      );
      expect(error.message).toContain("Example: SWITCHBOARD_SQLITE_CACHE_MB=16");
    }
  });

  test("each bad value names its variable, the problem and an example", () => {
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ SWITCHBOARD_HTTP_PORT: "70000" }, "SWITCHBOARD_HTTP_PORT", "Example: SWITCHBOARD_HTTP_PORT=8787"],
      [{ SWITCHBOARD_LOG_LEVEL: "loud" }, "SWITCHBOARD_LOG_LEVEL", 'got "loud"'],
      [{ SWITCHBOARD_LOG_FORMAT: "text" }, "SWITCHBOARD_LOG_FORMAT", "json or pretty"],
      [{ SWITCHBOARD_OPERATOR_TOKENS: "alice" }, "SWITCHBOARD_OPERATOR_TOKENS", "shorter than 16"],
      [
        { SWITCHBOARD_OPERATOR_TOKENS: "al ice=0123456789abcdef" },
        "SWITCHBOARD_OPERATOR_TOKENS",
        "1-64 characters",
      ],
      [
        { SWITCHBOARD_OPERATOR_TOKENS: "a=0123456789abcdef,b=0123456789abcdef" },
        "SWITCHBOARD_OPERATOR_TOKENS",
        "already in use",
      ],
      [
        { SWITCHBOARD_OPERATOR_TOKENS: "a=0123456789abcdef,a=fedcba9876543210" },
        "SWITCHBOARD_OPERATOR_TOKENS",
        "names a twice",
      ],
      [{ SWITCHBOARD_SHUTDOWN_GRACE_MS: "1.5" }, "SWITCHBOARD_SHUTDOWN_GRACE_MS", "whole number"],
      [{ SWITCHBOARD_AMBIGUOUS_HOLD_MS: "-1" }, "SWITCHBOARD_AMBIGUOUS_HOLD_MS", '"forever"'],
      [{ SWITCHBOARD_OPERATOR_TOKEN: "short" }, "SWITCHBOARD_OPERATOR_TOKEN", "at least 16 characters"],
      [{ SWITCHBOARD_METRICS_TOKEN: "short" }, "SWITCHBOARD_METRICS_TOKEN", "at least 16 characters"],
      [{ SWITCHBOARD_TIMEZONE: "Mars/Olympus" }, "SWITCHBOARD_TIMEZONE", "IANA time zone"],
      [{ SWITCHBOARD_WEB: "maybe" }, "SWITCHBOARD_WEB", "on or off"],
      [{ SWITCHBOARD_STANDBY: "on" }, "SWITCHBOARD_STANDBY", "needs SWITCHBOARD_DATABASE_URL"],
      [{ SWITCHBOARD_DATABASE_URL: "mysql://h/db" }, "SWITCHBOARD_DATABASE_URL", "postgres://"],
      [
        { SWITCHBOARD_DATABASE_URL: "postgres://h/db", SWITCHBOARD_DB: "./x.sqlite" },
        "SWITCHBOARD_DATABASE_URL",
        "not both",
      ],
      [{ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_MODE: "push" }, "TELEGRAM_MODE", "polling or webhook"],
      [
        { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_MODE: "webhook" },
        "TELEGRAM_WEBHOOK_URL",
        "must be set",
      ],
      [
        { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_ALLOWED_USERS: "12, bob smith" },
        "TELEGRAM_ALLOWED_USERS",
        '"bob smith", which is not a user id',
      ],
      [{ DISCORD_BOT_TOKEN: "d-token", DISCORD_API_URL: "ftp://x" }, "DISCORD_API_URL", "http(s) URL"],
      [
        { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_REQUEST_TIMEOUT_MS: "10s" },
        "TELEGRAM_REQUEST_TIMEOUT_MS",
        "from 100 to 120000",
      ],
      [
        { DISCORD_BOT_TOKEN: "d-token", DISCORD_REQUEST_TIMEOUT_MS: "999999" },
        "DISCORD_REQUEST_TIMEOUT_MS",
        "from 100 to 120000",
      ],
      [{ SLACK_BOT_TOKEN: "xoxb-1" }, "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"],
      [{ TELEGRAM_BOT_TOKEN: "123:abc" }, "TELEGRAM_BOT_TOKEN", "shaped <bot id>:<secret>"],
      [{ SWITCHBOARD_MAX_FILE_MB: "0" }, "SWITCHBOARD_MAX_FILE_MB", 'above 0, at most 2000 (got "0")'],
      [{ SWITCHBOARD_MAX_CONVERSATION_MB: "lots" }, "SWITCHBOARD_MAX_CONVERSATION_MB", 'got "lots"'],
      [{ SWITCHBOARD_MAX_AUDIO_MINUTES: "-1" }, "SWITCHBOARD_MAX_AUDIO_MINUTES", 'at most 600 (got "-1")'],
      [{ SWITCHBOARD_BLOB_RETENTION_DAYS: "0" }, "SWITCHBOARD_BLOB_RETENTION_DAYS", 'or off (got "0")'],
      [
        { SWITCHBOARD_EXPORT_TTL_HOURS: "a day" },
        "SWITCHBOARD_EXPORT_TTL_HOURS",
        'hours above 0, at most 8760 (got "a day")',
      ],
      [{ SWITCHBOARD_MODEL_INPUTS: "text,video" }, "SWITCHBOARD_MODEL_INPUTS", '"video"; use a comma list'],
      [
        { SWITCHBOARD_TRANSCRIPTION_MODEL: "openrouter:whisper" },
        "SWITCHBOARD_TRANSCRIPTION_MODEL",
        "openai-compatible",
      ],
    ];
    for (const [env, variable, fragment] of cases) {
      const error = refusal(env);
      expect(error.details).toEqual({ variable });
      expect(error.message.startsWith(variable)).toBe(true);
      expect(error.message).toContain(fragment);
      expect(error.message).toContain("Example:");
    }
  });

  test("media: file limit in MB, model inputs without text, the transcription model, the blob folder", () => {
    const defaults = loadConfig({});
    expect(defaults.media).toEqual({
      maxFileBytes: 20 * 1024 * 1024,
      maxConversationBytes: 500 * 1024 * 1024,
      maxAudioSeconds: 600,
      blobRetentionMs: null,
      exportTtlMs: 24 * 60 * 60 * 1000,
      modelInputs: null,
      transcriptionModel: null,
    });
    const config = loadConfig({
      SWITCHBOARD_MAX_FILE_MB: "5",
      SWITCHBOARD_MAX_AUDIO_MINUTES: "2.5",
      SWITCHBOARD_BLOB_RETENTION_DAYS: "30",
      SWITCHBOARD_MODEL_INPUTS: "text, image,file",
      SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1",
      SWITCHBOARD_BLOB_DIR: "/var/lib/switchboard/blobs",
    });
    expect(config.media.maxFileBytes).toBe(5 * 1024 * 1024);
    expect(config.media.maxAudioSeconds).toBe(150);
    expect(config.media.blobRetentionMs).toBe(30 * 24 * 60 * 60 * 1000);
    expect(loadConfig({ SWITCHBOARD_BLOB_RETENTION_DAYS: "off" }).media.blobRetentionMs).toBeNull();
    expect(loadConfig({ SWITCHBOARD_EXPORT_TTL_HOURS: "0.5" }).media.exportTtlMs).toBe(30 * 60 * 1000);
    expect([...(config.media.modelInputs ?? [])]).toEqual(["image", "file"]);
    expect(config.media.transcriptionModel).toBe("openai-compatible:whisper-1");
    expect(config.database).toMatchObject({ engine: "sqlite", blobDir: "/var/lib/switchboard/blobs" });
  });

  test("ALLOWED_USERS=pairing, alone or with ids, turns pairing codes on", () => {
    const alone = loadConfig({ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_ALLOWED_USERS: "pairing" });
    expect(alone.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(), pairing: true });
    const withIds = loadConfig({
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      TELEGRAM_ALLOWED_USERS: "pairing, 12345",
    });
    expect(withIds.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(["12345"]), pairing: true });
    const plain = loadConfig({ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_ALLOWED_USERS: "12345" });
    expect(plain.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(["12345"]) });
    const slack = loadConfig({
      SLACK_BOT_TOKEN: "xoxb-1",
      SLACK_SIGNING_SECRET: "s",
      SLACK_ALLOWED_USERS: "U012AB3CD,pairing",
    });
    expect(slack.allowLists.slack).toEqual({ kind: "ids", ids: new Set(["U012AB3CD"]), pairing: true });
    expect(() =>
      loadConfig({ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_ALLOWED_USERS: "pairing,paring" }),
    ).toThrow(/TELEGRAM_ALLOWED_USERS=pairing,12345/);
  });

  test("platforms: Telegram webhook, Discord, and Slack's mode from which secret is set", () => {
    const config = loadConfig({
      TELEGRAM_BOT_TOKEN: "123:telegram-token-0123456789",
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
    expect(config.channels.telegram).toMatchObject({
      mode: "webhook",
      webhookUrl: "https://bot.example.com/hooks/tg",
      webhookPath: "/hooks/tg",
      requestTimeoutMs: 10_000,
    });
    expect(config.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(["12", "34"]) });
    expect(config.allowLists.discord).toEqual({ kind: "everyone" });
    expect(config.channels.discord).toMatchObject({ requestTimeoutMs: 15_000 });
    const slow = loadConfig({ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_REQUEST_TIMEOUT_MS: "30000" });
    expect(slow.channels.telegram).toMatchObject({ requestTimeoutMs: 30_000 });
    expect(config.channels.slack).toMatchObject({ mode: "http", apiUrl: "http://127.0.0.1:3001/api/" });
    expect(config.allowLists.slack).toEqual({ kind: "ids", ids: new Set() });
    expect(loadConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1" }).channels.slack).toMatchObject(
      { mode: "socket" },
    );
  });

  test("each channel's bounds are its adapter's, named by the variable", () => {
    const timeout = (value: string) =>
      refusal({ TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_REQUEST_TIMEOUT_MS: value }).message;
    expect(timeout("120001")).toBe(
      'TELEGRAM_REQUEST_TIMEOUT_MS must be a whole number of milliseconds from 100 to 120000 (got "120001"). Example: TELEGRAM_REQUEST_TIMEOUT_MS=10000',
    );
    expect(timeout("99")).toContain("from 100 to 120000");
    expect(refusal({ DISCORD_BOT_TOKEN: "d-token", DISCORD_REQUEST_TIMEOUT_MS: "120001" }).message).toContain(
      "DISCORD_REQUEST_TIMEOUT_MS must be a whole number of milliseconds from 100 to 120000",
    );
    const token = refusal({ TELEGRAM_BOT_TOKEN: "1:too-short-secret" });
    expect(token.message).toStartWith(
      "TELEGRAM_BOT_TOKEN is not valid: must be the bot token from @BotFather",
    );
    expect(token.message).not.toContain("too-short-secret");
    expect(refusal({ SLACK_BOT_TOKEN: "xoxp-user-token", SLACK_APP_TOKEN: "xapp-1" }).message).toStartWith(
      "SLACK_BOT_TOKEN is not valid: botToken must be a bot token starting with xoxb-",
    );
    expect(refusal({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xoxb-2" }).message).toStartWith(
      "SLACK_APP_TOKEN is not valid",
    );
  });

  test("SWITCHBOARD_OPERATOR_TOKENS: name=token pairs, each token a secret", () => {
    const config = loadConfig({
      SWITCHBOARD_OPERATOR_TOKENS: " alice=alice-token-0123456789 , bob=bob-token-0123456789ab",
    });
    expect(config.operatorTokens).toEqual([
      { name: "alice", token: "alice-token-0123456789" },
      { name: "bob", token: "bob-token-0123456789ab" },
    ]);
    expect(config.operatorToken).toBeNull();
    expect(config.secrets).toEqual(
      expect.arrayContaining(["alice-token-0123456789", "bob-token-0123456789ab"]),
    );
  });

  test("every secret is collected for redaction, the database password included", () => {
    const env = {
      TELEGRAM_BOT_TOKEN: "123:telegram-token-0123456789",
      SLACK_BOT_TOKEN: "xoxb-slack-token",
      SLACK_APP_TOKEN: "xapp-app-token",
      OPENROUTER_API_KEY: "sk-or-key",
      SWITCHBOARD_OPERATOR_TOKEN: "operator-token-0123456789",
      SWITCHBOARD_METRICS_TOKEN: "metrics-token-0123456789",
      SWITCHBOARD_DATABASE_URL: "postgres://sb:p%40ss-word@db/switchboard",
    };
    const { secrets, metricsToken } = loadConfig(env);
    expect(metricsToken).toBe("metrics-token-0123456789");
    expect(redactSecrets("scraped with metrics-token-0123456789", env)).toBe("scraped with [redacted]");
    for (const value of [
      "123:telegram-token-0123456789",
      "xoxb-slack-token",
      "xapp-app-token",
      "sk-or-key",
      "operator-token-0123456789",
      "metrics-token-0123456789",
      "p@ss-word",
    ]) {
      expect(secrets).toContain(value);
    }
    expect(redactSecrets("token 123:telegram-token-0123456789 and sk-or-key", env)).toBe(
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
      '"irc:dm" is not a valid key: a surface key is "<channel>:<surface>" with channel telegram, discord, slack, whatsapp, matrix, web, api or *',
    );
    expect(refusal({}, { version: 1, surfaces: { "slack:thread": { delivery: "fax" } } }).message).toContain(
      "surfaces.slack:thread.delivery",
    );
    expect(
      refusal({}, { version: 1, surfaces: { "slack:thread": { historyScope: "everyone" } } }).message,
    ).toContain("surfaces.slack:thread.historyScope");
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
  test('historyScope: "channel" on a Slack thread, inherited from "slack:*", overridden per kind', () => {
    const file = fileConfig({
      surfaces: { "slack:*": { historyScope: "channel" }, "slack:dm": { historyScope: "conversation" } },
    });
    expect(surfacePolicy(file, "slack", "thread").historyScope).toBe("channel");
    expect(surfacePolicy(file, "slack", "dm").historyScope).toBe("conversation");
    expect(surfacePolicy(file, "telegram", "thread").historyScope).toBeUndefined();
  });

  test("defaults: supersede and stream in DMs, queue and terminal with a mention elsewhere", () => {
    const file = fileConfig();
    expect(surfacePolicy(file, "telegram", "dm")).toEqual(DEFAULT_SURFACES.dm);
    expect(surfacePolicy(file, "slack", "thread")).toEqual(DEFAULT_SURFACES.thread);
    expect(DEFAULT_SURFACES.dm).toMatchObject({ inputPolicy: "supersede", delivery: "stream" });
    expect(DEFAULT_SURFACES.group).toMatchObject({ inputPolicy: "queue", requireMention: true });
  });

  test("overrides stack: *:*, then *:surface, then channel:*, then channel:surface, field by field", () => {
    const file = fileConfig({
      surfaces: {
        "*:*": { messagesPerMinute: 7, delivery: "terminal" },
        "*:group": { inputPolicy: "inject", instructions: "be brief" },
        "discord:*": { delivery: "stream", inputPolicy: "interrupt" },
        "discord:group": {
          requireMention: false,
          approvers: ["42"],
          messagesPerMinute: 5,
          edits: "new-input",
        },
        "*:dm": { statusReactions: false },
      },
    });
    expect(surfacePolicy(file, "discord", "group")).toEqual({
      inputPolicy: "interrupt",
      delivery: "stream",
      requireMention: false,
      nativeStreaming: false,
      approvers: ["42"],
      messagesPerMinute: 5,
      edits: "new-input",
      statusReactions: false,
      instructions: "be brief",
    });
    expect(surfacePolicy(file, "telegram", "dm")).toMatchObject({ edits: "ignore", statusReactions: false });
    expect(surfacePolicy(fileConfig({}), "slack", "dm")).toMatchObject({ statusReactions: true });
    // Telegram's and Matrix's `editedMessages` is that channel's default for `edits`.
    const legacy = fileConfig({ telegram: { editedMessages: "new-input" } });
    expect(surfacePolicy(legacy, "telegram", "group").edits).toBe("new-input");
    expect(surfacePolicy(legacy, "discord", "group").edits).toBe("ignore");
    expect(surfacePolicy(file, "telegram", "group")).toMatchObject({
      inputPolicy: "inject",
      delivery: "terminal",
    });
    expect(surfacePolicy(file, "discord", "dm")).toMatchObject({
      inputPolicy: "interrupt",
      delivery: "stream",
    });
    expect(surfacePolicy(file, "slack", "dm")).toMatchObject({ messagesPerMinute: 7, delivery: "terminal" });
  });

  test("a surface picks its tool sets by name; more specific keys replace the list", () => {
    const file = fileConfig({
      mcpServers: { notes: { command: "bun", args: ["notes.ts"] } },
      surfaces: { "*:group": { tools: ["web"] }, "telegram:group": { tools: ["notes", "schedules"] } },
    });
    expect(surfacePolicy(file, "telegram", "dm").tools).toBeUndefined();
    expect(surfacePolicy(file, "discord", "group").tools).toEqual(["web"]);
    expect(surfacePolicy(file, "telegram", "group").tools).toEqual(["notes", "schedules"]);
  });

  test("a tool set that is neither built in nor an MCP server is refused, with the closest name", () => {
    const error = refusal(
      {},
      {
        mcpServers: { notes: { command: "bun", args: ["notes.ts"] } },
        surfaces: { "telegram:dm": { tools: ["note"] } },
      },
    );
    expect(error.message).toContain(
      'surfaces.telegram:dm.tools.0: "note" is not a tool set (did you mean "notes"?)',
    );
    expect(error.message).toContain(
      "tool sets are web, schedules, agent, state, history, files, agents, notes",
    );
  });
});
