import { afterAll, afterEach, beforeAll } from "bun:test";
import type { DiscordEmulator } from "../../emulators/discord/index.ts";
import { privateChat, type TelegramEmulator } from "../../emulators/telegram/index.ts";
import type { FakeLlmRule } from "../../support/llm/fake-llm-rules.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import { tempDir } from "../../support/runtime.ts";
import { e2eGatewayEnv, type SurfaceSettings } from "./gateway-env.ts";
import {
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./gateway-process.ts";

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
  /**
   * One gateway on `env()` for the tests of the enclosing describe (or file): started before
   * them, stopped with SIGTERM after them.
   */
  gatewayAroundTests(env: () => Record<string, string>): RunningGateway;
  /** Stops (SIGTERM) every gateway started through the fixture after each test: files that start one per test. */
  stopGatewaysAfterEach(): void;
}

export interface RunningGateway {
  /** The gateway running now: a new process after crashAndRestart. */
  readonly process: GatewayProcess;
  /** SIGKILLs it and starts a new one on the same environment and database. */
  crashAndRestart(): Promise<void>;
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
  let gateways: GatewayProcess[] = [];
  const stopAll = async () => {
    const stopping = gateways;
    gateways = [];
    await Promise.all(stopping.map((gateway) => gateway.kill("SIGTERM")));
  };
  afterAll(async () => {
    await stopAll();
    await platform.close();
    await llm.stop();
    dir.cleanup();
  }, GATEWAY_STOP_TIMEOUT_MS);
  const startGateway = async (env: Record<string, string>, timeoutMs?: number) => {
    const gateway = await startGatewayProcess(env, timeoutMs);
    gateways.push(gateway);
    return gateway;
  };
  return {
    dir,
    llm,
    platform,
    startGateway,
    gatewayAroundTests(env) {
      let current: GatewayProcess | null = null;
      beforeAll(async () => {
        current = await startGateway(env());
      }, GATEWAY_START_TIMEOUT_MS);
      afterAll(async () => {
        await current?.kill("SIGTERM");
      }, GATEWAY_STOP_TIMEOUT_MS);
      return {
        get process() {
          if (!current) throw new Error("the gateway starts in beforeAll; use it inside a test");
          return current;
        },
        async crashAndRestart() {
          await current?.kill("SIGKILL");
          current = await startGateway(env());
        },
      };
    },
    stopGatewaysAfterEach() {
      afterEach(stopAll, GATEWAY_STOP_TIMEOUT_MS);
    },
  };
}

/** How long a `say` waits for the bot's reply. */
const SAY_TIMEOUT_MS = 20_000;

/**
 * `say(from, text, replyContains)`: writes `text` to the bot in `from`'s Telegram DM and resolves
 * with the text of the bot's first reply there that contains `replyContains`.
 */
export function telegramDmSay(telegram: TelegramEmulator, timeoutMs = SAY_TIMEOUT_MS) {
  return async function say(from: Parameters<typeof privateChat>[0], text: string, replyContains: string) {
    telegram.incoming({ chat: privateChat(from), from, text });
    const reply = await telegram.waitForMessage(
      from.id,
      (m) => m.fromBot && m.visibleText.includes(replyContains),
      timeoutMs,
    );
    return reply.visibleText;
  };
}

/**
 * `say(userId, text, replyContains)`: writes `text` to the bot in the user's Discord DM and
 * resolves with the content of the bot's first reply there that contains `replyContains`.
 */
export function discordDmSay(discord: DiscordEmulator, timeoutMs = SAY_TIMEOUT_MS) {
  return async function say(userId: string, text: string, replyContains: string) {
    discord.sendDm(userId, text);
    const channel = discord.dmChannelId(userId);
    const reply = await discord.waitFor(
      () =>
        discord
          .visibleMessages(channel)
          .find((m) => m.author.id === discord.bot.id && m.content.includes(replyContains)),
      timeoutMs,
      `a bot reply containing "${replyContains}"`,
    );
    return reply.content;
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
