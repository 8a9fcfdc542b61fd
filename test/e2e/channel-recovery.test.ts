/**
 * A platform unreachable when the gateway starts (nothing listens on its API's port) comes up
 * later: the channel is started again, each time with a fresh client, until it starts; /readyz
 * goes from degraded to ready and the bot answers. discord.js logs in once per client, so before
 * fresh clients Discord never recovered ("DiscordAdapter.start() can be called once").
 *
 * The scenario is a platform back 10 s later; here it comes back after the second failed
 * attempt, so the gateway's own backoff (1 s, then 2 s) is what waits.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { ChannelName } from "../../channels/types.ts";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { discordDmSay, telegramDmSay } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

/** A platform emulator started late on a chosen port. */
interface LatePlatform {
  /** Says `text` to the bot in a DM; resolves with the bot's answer (the fake model echoes). */
  say(text: string): Promise<string>;
  close(): Promise<void> | void;
}

interface Case {
  name: string;
  channel: Exclude<ChannelName, "web">;
  /** The gateway's variables for this platform with its API on 127.0.0.1:`ports.platform`. */
  env(ports: { platform: number; gateway: number }): Record<string, string>;
  /** Starts the platform's emulator on `port`. */
  up(port: number): LatePlatform;
}

function telegramUp(port: number): LatePlatform {
  const telegram = startTelegramEmulator({ port });
  const say = telegramDmSay(telegram);
  return { say: (text) => say(user(1001, "Alice"), text, text), close: () => telegram.close() };
}

const telegramEnv = (port: number) => ({
  TELEGRAM_BOT_TOKEN: "123456789:AAEmulatorTokenForTests_abcdefghijk",
  TELEGRAM_API_ROOT: `http://127.0.0.1:${port}`,
  TELEGRAM_ALLOWED_USERS: "*",
});

const CASES: Case[] = [
  { name: "telegram", channel: "telegram", env: (ports) => telegramEnv(ports.platform), up: telegramUp },
  {
    // Updates come to the gateway's webhook route, which must reach the fresh adapter.
    name: "telegram (webhook)",
    channel: "telegram",
    env: (ports) => ({
      ...telegramEnv(ports.platform),
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${ports.gateway}/telegram/webhook`,
      TELEGRAM_WEBHOOK_SECRET: "s3cret-webhook-token-abcdef",
    }),
    up: telegramUp,
  },
  {
    name: "discord",
    channel: "discord",
    env: ({ platform: port }) => ({
      DISCORD_BOT_TOKEN: "emulated-discord-token",
      DISCORD_API_URL: `http://127.0.0.1:${port}/api`,
      DISCORD_ALLOWED_USERS: "*",
    }),
    up(port) {
      const discord = startDiscordEmulator({ port });
      const alice = discord.createUser("alice");
      const say = discordDmSay(discord);
      return { say: (text) => say(alice.id, text, text), close: () => discord.close() };
    },
  },
  {
    name: "slack",
    channel: "slack",
    env: ({ platform: port }) => ({
      SLACK_BOT_TOKEN: "xoxb-1-emulator-bot-token",
      SLACK_APP_TOKEN: "xapp-1-emulator-app-token",
      SLACK_API_URL: `http://127.0.0.1:${port}/api`,
      SLACK_ALLOWED_USERS: "*",
    }),
    up(port) {
      const slack = startSlackEmulator({ port });
      return {
        async say(text) {
          slack.pushEvent(slack.events.dm({ user: "U0ALICE", text }));
          const reply = await slack.waitFor(
            () =>
              slack
                .messages("D0ALICE")
                .find((m) => m.user === slack.identity.botUserId && m.text.includes(text)),
            20_000,
            `a bot reply containing "${text}"`,
          );
          return reply.text;
        },
        close: () => slack.close(),
      };
    },
  },
];

interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; degraded?: boolean; detail?: string }>;
}

const dir = tempDir("switchboard-e2e-recovery-");
let llm: FakeLlmServer | null = null;
let running: { gateway: GatewayProcess | null; platform: LatePlatform | null } = {
  gateway: null,
  platform: null,
};

afterEach(async () => {
  await running.gateway?.kill("SIGTERM");
  await running.platform?.close();
  running = { gateway: null, platform: null };
}, GATEWAY_STOP_TIMEOUT_MS);

describe("a platform unreachable at start and up later", () => {
  test.each(CASES)(
    "$name: started again with a fresh client until it starts; /readyz goes from degraded to ready",
    async ({ name, channel, env, up }) => {
      llm ??= startFakeLlmServer();
      const port = freePort();
      const gatewayPort = freePort();
      const gateway = await startGatewayProcess(
        e2eGatewayEnv({
          dir: dir.path,
          llm,
          dbFile: `${name.replace(/\W+/g, "-")}.sqlite`,
          extra: {
            ...env({ platform: port, gateway: gatewayPort }),
            SWITCHBOARD_HTTP_PORT: String(gatewayPort),
          },
        }),
        GATEWAY_START_TIMEOUT_MS,
      );
      running.gateway = gateway;
      const readiness = async () => (await (await fetch(`${gateway.url}/readyz`)).json()) as Readiness;
      const failures = () =>
        gateway.events().filter((e) => e.event === "channel.start_failed" && e.channel === channel);

      const down = await readiness();
      expect(down.ready).toBe(true);
      expect(down.checks[`channel:${channel}`]).toMatchObject({ ok: false, degraded: true });

      // Two attempts failed (the second on a fresh client) before the platform comes back.
      await eventually(() => failures().length >= 2, 10_000, `a second failed start of ${channel}`);
      running.platform = up(port);

      await eventually(
        () => gateway.events().some((e) => e.event === "channel.recovered" && e.channel === channel),
        20_000,
        `${channel} to start once its API answers`,
      );
      await eventually(
        async () => (await readiness()).checks[`channel:${channel}`]?.ok === true,
        10_000,
        `/readyz to report ${channel} ready`,
      );
      // Every failure was the platform being away, never a client that cannot start again.
      expect(failures().map((e) => JSON.stringify(e.error))).not.toContainEqual(
        expect.stringContaining("called once"),
      );
      expect(await running.platform.say(`back on ${channel}`)).toContain(`back on ${channel}`);
    },
    60_000,
  );
});

afterAll(async () => {
  await llm?.stop();
  dir.cleanup();
});
