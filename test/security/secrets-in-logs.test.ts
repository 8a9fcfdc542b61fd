/**
 * No token or secret in any log line. A gateway with all three channels, the operator API, a
 * Telegram webhook secret, a Slack signing secret and an OpenRouter-style key is exercised with
 * messages and with failures (a wrong webhook secret and operator token, a 401 from the model, a
 * 401 from the Telegram API, a wrong bot token at startup, a configuration error); then every
 * captured stdout and stderr line is searched for every secret.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  eventually,
  freePort,
  type GatewayProcess,
  startGatewayProcess,
} from "../e2e/support/gateway-process.ts";
import { waitUntilSettled } from "../e2e/support/settled.ts";
import { type DiscordEmulator, startDiscordEmulator } from "../emulators/discord/index.ts";
import { type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import {
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const SECRETS = {
  TELEGRAM_BOT_TOKEN: `${424_242}:AA${hex(16)}`,
  TELEGRAM_WEBHOOK_SECRET: `whsec-${hex(16)}`,
  DISCORD_BOT_TOKEN: `MTA${hex(20)}.G${hex(3)}.${hex(16)}`,
  SLACK_BOT_TOKEN: `xoxb-1-${hex(16)}`,
  SLACK_APP_TOKEN: `xapp-1-${hex(16)}`,
  SLACK_SIGNING_SECRET: `slsig${hex(16)}`,
  SWITCHBOARD_OPERATOR_TOKEN: `op-${hex(16)}`,
  SWITCHBOARD_METRICS_TOKEN: `metrics-${hex(16)}`,
  OPENROUTER_API_KEY: `sk-or-v1-${hex(32)}`,
} as const;

const alice = user(1001, "Alice");
const dir = tempDir("switchboard-sec-logs-");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
let discord: DiscordEmulator;
let slack: SlackEmulator;
let gateway: GatewayProcess;
let gatewayDb: string;
/** Every line any gateway process in this file wrote, on stdout or stderr. */
const captured: string[] = [];

function env(extra: Record<string, string> = {}): Record<string, string> {
  const port = freePort();
  return {
    ...SECRETS,
    SWITCHBOARD_DB: join(dir.path, `gateway-${port}.sqlite`),
    SWITCHBOARD_HTTP_PORT: String(port),
    SWITCHBOARD_LOG_LEVEL: "debug",
    SWITCHBOARD_MODEL: "openrouter:test/secret-model",
    OPENROUTER_BASE_URL: llm.openrouterBaseUrl,
    TELEGRAM_API_ROOT: telegram.url,
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
    TELEGRAM_ALLOWED_USERS: "*",
    DISCORD_API_URL: discord.apiUrl,
    DISCORD_ALLOWED_USERS: "*",
    SLACK_API_URL: `${slack.url}/api`,
    SLACK_ALLOWED_USERS: "*",
    ...extra,
  };
}

beforeAll(async () => {
  llm = startFakeLlmServer();
  telegram = startTelegramEmulator({ token: SECRETS.TELEGRAM_BOT_TOKEN });
  discord = startDiscordEmulator({ token: SECRETS.DISCORD_BOT_TOKEN });
  slack = startSlackEmulator({ botToken: SECRETS.SLACK_BOT_TOKEN, appToken: SECRETS.SLACK_APP_TOKEN });
  const gatewayEnv = env();
  gatewayDb = gatewayEnv.SWITCHBOARD_DB!;
  gateway = await startGatewayProcess(gatewayEnv, 20_000);
}, 30_000);

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await Promise.all([telegram.close(), discord.close(), slack.close(), llm.stop()]);
  dir.cleanup();
});

/** Starts a gateway that is expected to fail, and keeps what it wrote. */
async function captureFailedStart(extra: Record<string, string>): Promise<void> {
  try {
    const unexpected = await startGatewayProcess(env(extra), 15_000);
    captured.push(...unexpected.logs);
    await unexpected.kill("SIGTERM");
    throw new Error("the gateway started although it should not have");
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes("should not have")) throw error;
    captured.push(...message.split("\n"));
  }
}

/**
 * Starts a gateway whose bot token Telegram refuses: it runs on without that channel (see
 * channel-starter.ts) and logs `channel.start_failed`; keeps what it wrote until then.
 */
async function captureRefusedChannel(extra: Record<string, string>): Promise<void> {
  const degraded = await startGatewayProcess(env(extra), 15_000);
  try {
    await eventually(
      () => degraded.logs.some((line) => line.includes('"event":"channel.start_failed"')),
      10_000,
      "channel.start_failed for the refused token",
    );
  } finally {
    await degraded.kill("SIGTERM");
    captured.push(...degraded.logs);
  }
}

test("every secret stays out of every log line", async () => {
  // Messages on all three channels, answered.
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello from telegram" });
  const discordUser = discord.createUser("dora");
  discord.sendDm(discordUser.id, "hello from discord");
  slack.pushEvent(slack.events.dm({ user: "U0SLACKER", text: "hello from slack" }));
  await eventually(
    () =>
      ["telegram", "discord", "slack"].every((c) =>
        llm.requests().some((r) => r.lastUserText === `hello from ${c}`),
      ),
    15_000,
    "a model call for each channel",
  );
  expect(llm.requests()[0]?.authorization).toBe(`Bearer ${SECRETS.OPENROUTER_API_KEY}`);
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("hello from telegram"),
    10_000,
  );

  // A wrong webhook secret and wrong operator tokens; the right operator token once.
  const forged = await fetch(`${gateway.url}/telegram/webhook`, {
    method: "POST",
    headers: { "x-telegram-bot-api-secret-token": `${SECRETS.TELEGRAM_WEBHOOK_SECRET}x` },
    body: "{}",
  });
  expect(forged.status).toBe(401);
  for (const authorization of [
    `Bearer ${SECRETS.SWITCHBOARD_OPERATOR_TOKEN}x`,
    `Bearer ${SECRETS.SLACK_BOT_TOKEN}`,
  ]) {
    expect((await fetch(`${gateway.url}/api/runs`, { headers: { authorization } })).status).toBe(401);
  }
  // /metrics with a wrong metrics token through a proxy (forwarded: the token is required).
  const scrape = await fetch(`${gateway.url}/metrics`, {
    headers: {
      "x-forwarded-for": "203.0.113.9",
      authorization: `Bearer ${SECRETS.SWITCHBOARD_METRICS_TOKEN}x`,
    },
  });
  expect(scrape.status).toBe(401);
  const runs = await fetch(`${gateway.url}/api/runs`, {
    headers: { authorization: `Bearer ${SECRETS.SWITCHBOARD_OPERATOR_TOKEN}` },
  });
  expect(runs.status).toBe(200);

  // The model refuses the key (401), then the Telegram API refuses a send (401).
  llm.addRules([
    {
      match: { lastUserContains: "model says no" },
      reply: {
        kind: "http-error",
        status: 401,
        message: `invalid key ${SECRETS.OPENROUTER_API_KEY.slice(0, 12)}…`,
      },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "model says no" });
  await eventually(
    () => llm.requests().some((r) => r.lastUserText === "model says no"),
    10_000,
    "the refused call",
  );
  telegram.injectFault("sendMessage", { kind: "api_error", status: 401, description: "Unauthorized" }, 3);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "send fails" });
  await eventually(
    () => telegram.calls.some((c) => c.method === "sendMessage" && c.fault === "api_error"),
    10_000,
    "a refused sendMessage",
  );
  // Let the refused send be retried (or given up) and every run end before the logs are read.
  await waitUntilSettled(gatewayDb);
  captured.push(...gateway.logs);

  // Startup failures: a bot token Telegram refuses (the gateway runs on without that channel), and
  // configuration errors.
  await captureRefusedChannel({ TELEGRAM_BOT_TOKEN: `${SECRETS.TELEGRAM_BOT_TOKEN}-revoked` });
  await captureFailedStart({ SWITCHBOARD_HTTP_PORT: "not-a-port" });
  await captureFailedStart({ SLACK_API_URL: `ftp://${SECRETS.SLACK_BOT_TOKEN}@127.0.0.1/` });

  expect(captured.some((l) => l.includes("telegram.webhook_rejected"))).toBe(true);
  expect(captured.some((l) => l.includes("configuration error"))).toBe(true);
  expect(captured.some((l) => l.includes("channel.start_failed"))).toBe(true);
  const values = [...Object.values(SECRETS), `${SECRETS.TELEGRAM_BOT_TOKEN}-revoked`];
  const leaks = captured.flatMap((line, index) =>
    values
      .filter((secret) => line.includes(secret))
      .map((secret) => `line ${index}: ${line.replace(secret, "<SECRET>")}`),
  );
  expect(leaks).toEqual([]);
  expect(captured.length).toBeGreaterThan(20);
}, 60_000);
