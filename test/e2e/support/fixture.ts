import { afterAll } from "bun:test";
import type { DiscordEmulator } from "../../emulators/discord/index.ts";
import type { SlackEmulator } from "../../emulators/slack/index.ts";
import type { TelegramEmulator } from "../../emulators/telegram/index.ts";
import type { FakeLlmRule } from "../../support/llm/fake-llm-rules.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import { tempDir } from "../../support/runtime.ts";
import { e2eGatewayEnv, type SurfaceSettings } from "./gateway-env.ts";
import { GATEWAY_STOP_TIMEOUT_MS, type GatewayProcess, startGatewayProcess } from "./gateway-process.ts";

/** What one end-to-end test file shares: a temp directory, the fake model and one platform emulator. */
export interface E2eFixture<Platform> {
  /** Databases and config files go here; removed after the file's tests. */
  readonly dir: { path: string };
  readonly llm: FakeLlmServer;
  readonly platform: Platform;
  /**
   * Starts `switchboard start` with `env` (see startGatewayProcess); the fixture stops it with
   * SIGTERM after the file's tests, before it closes the emulator.
   */
  startGateway(env: Record<string, string>, timeoutMs?: number): Promise<GatewayProcess>;
}

/**
 * The setup every gateway end-to-end file repeats: a temp directory, the fake LLM server and a
 * platform emulator (`startPlatform`), started when the file loads, so the file can destructure
 * them; an afterAll hook stops the gateways started through the fixture, then closes them.
 */
export function useE2eFixture<Platform extends { close(): Promise<void> | void }>(
  prefix: string,
  startPlatform: () => Platform,
): E2eFixture<Platform> {
  const dir = tempDir(prefix);
  const llm = startFakeLlmServer();
  const platform = startPlatform();
  const gateways: GatewayProcess[] = [];
  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.kill("SIGTERM")));
    await platform.close();
    await llm.stop();
    dir.cleanup();
  }, GATEWAY_STOP_TIMEOUT_MS);
  return {
    dir,
    llm,
    platform,
    async startGateway(env, timeoutMs) {
      const gateway = await startGatewayProcess(env, timeoutMs);
      gateways.push(gateway);
      return gateway;
    },
  };
}

export interface PlatformEnvOptions {
  /** Per-surface settings for SWITCHBOARD_CONFIG; without, the built-in defaults apply. */
  surfaces?: SurfaceSettings;
  /** User ids on the platform's allowlist. */
  allowed: ReadonlyArray<string | number>;
  dbFile?: string;
  configFile?: string;
  extra?: Record<string, string>;
}

/** A gateway environment connected to the Telegram emulator (polling). */
export function telegramGatewayEnv(
  fixture: E2eFixture<TelegramEmulator>,
  options: PlatformEnvOptions,
): Record<string, string> {
  return platformGatewayEnv(fixture, options, {
    TELEGRAM_BOT_TOKEN: fixture.platform.token,
    TELEGRAM_API_ROOT: fixture.platform.url,
    TELEGRAM_ALLOWED_USERS: options.allowed.join(","),
  });
}

/** A gateway environment connected to the Discord emulator. */
export function discordGatewayEnv(
  fixture: E2eFixture<DiscordEmulator>,
  options: PlatformEnvOptions,
): Record<string, string> {
  return platformGatewayEnv(fixture, options, {
    DISCORD_BOT_TOKEN: fixture.platform.token,
    DISCORD_API_URL: fixture.platform.apiUrl,
    DISCORD_ALLOWED_USERS: options.allowed.join(","),
  });
}

/** Slack in Socket Mode against the emulator (`allowed`: Slack user ids). */
export function slackGatewayEnv(
  fixture: E2eFixture<SlackEmulator>,
  options: PlatformEnvOptions,
): Record<string, string> {
  return platformGatewayEnv(fixture, options, {
    SLACK_BOT_TOKEN: fixture.platform.botToken,
    SLACK_APP_TOKEN: fixture.platform.appToken,
    SLACK_API_URL: `${fixture.platform.url}/api`,
    SLACK_ALLOWED_USERS: options.allowed.join(","),
  });
}

function platformGatewayEnv(
  fixture: E2eFixture<unknown>,
  options: PlatformEnvOptions,
  platformVariables: Record<string, string>,
): Record<string, string> {
  return e2eGatewayEnv({
    dir: fixture.dir.path,
    llm: fixture.llm,
    ...(options.surfaces ? { surfaces: options.surfaces } : {}),
    ...(options.dbFile ? { dbFile: options.dbFile } : {}),
    ...(options.configFile ? { configFile: options.configFile } : {}),
    extra: { ...platformVariables, ...options.extra },
  });
}

/**
 * A fake-LLM rule whose answer to `lastUserContains` streams slowly (`chunks` pieces,
 * `chunkDelayMs` apart), so a test can send the next message while it is still being written.
 */
export function slowAnswerRule(
  lastUserContains: string,
  text: string,
  chunks: number,
  chunkDelayMs: number,
): FakeLlmRule {
  return { match: { lastUserContains }, reply: { kind: "text", text, chunks, chunkDelayMs } };
}
