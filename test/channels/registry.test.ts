/**
 * The channel registry (src/gateway/channels.ts) against CHANNEL_NAMES: every channel has a module
 * (the web chat, built by the gateway from its own settings, is the one exception), each module
 * describes the adapter it makes, and every secret variable a module names is kept out of log
 * lines and configuration errors.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { PlatformChannel } from "../../channels/module.ts";
import { CHANNEL_NAMES } from "../../channels/types.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "../../src/gateway/channels.ts";
import { loadConfig, redactSecrets } from "../../src/gateway/config/index.ts";
import { systemClock } from "../../src/util/clock.ts";
import { createLogger, silentLogger } from "../../src/util/log.ts";

/**
 * An environment that configures each channel with every one of its secret variables set to a
 * value of the right shape. A new channel needs an entry (the type asks for one).
 */
const CONFIGURED: Record<PlatformChannel, Record<string, string>> = {
  telegram: {
    TELEGRAM_BOT_TOKEN: "424242:registry-test-telegram-token",
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_URL: "https://bot.example.com/telegram/webhook",
    TELEGRAM_WEBHOOK_SECRET: "registry-test-webhook-secret",
  },
  discord: { DISCORD_BOT_TOKEN: "registry-test-discord-token" },
  slack: {
    SLACK_BOT_TOKEN: "xoxb-registry-test-bot-token",
    SLACK_APP_TOKEN: "xapp-registry-test-app-token",
    SLACK_SIGNING_SECRET: "registry-test-signing-secret",
  },
  whatsapp: {
    WHATSAPP_ACCESS_TOKEN: "EAAGregistry-test-access-token",
    WHATSAPP_PHONE_NUMBER_ID: "106540352242922",
    WHATSAPP_APP_SECRET: "registry-test-app-secret",
    WHATSAPP_VERIFY_TOKEN: "registry-test-verify-token",
  },
  matrix: {
    MATRIX_HOMESERVER_URL: "https://matrix.example.org",
    MATRIX_ACCESS_TOKEN: "syt_registry-test-access-token",
    MATRIX_USER_ID: "@bot:example.org",
    MATRIX_PASSWORD: "registry-test-password",
  },
  api: { SWITCHBOARD_APP_TOKENS: "crm=registry-test-app-token-1" },
};

describe("the channel registry", () => {
  test("every channel name but the web chat has a module, registered under its own name", () => {
    for (const name of CHANNEL_NAMES) {
      if (name === "web") continue;
      expect(Object.hasOwn(CHANNEL_MODULES, name)).toBe(true);
      expect(CHANNEL_MODULES[name].name).toBe(name);
    }
    expect(PLATFORM_CHANNELS).toEqual(CHANNEL_NAMES.filter((name) => name !== "web"));
  });

  test("each channel is configured by its own variables, with nobody allowed until its list says", () => {
    const unset = loadConfig({});
    expect(unset.channels).toEqual({});
    for (const name of PLATFORM_CHANNELS) {
      const config = loadConfig(CONFIGURED[name]);
      expect(Object.keys(config.channels)).toEqual([name]);
      expect(config.allowLists[name]).toEqual({ kind: "ids", ids: new Set() });
    }
  });

  test("each module's adapter is its channel's, in the markup the module names", () => {
    for (const name of PLATFORM_CHANNELS) {
      const channelModule = CHANNEL_MODULES[name];
      const adapter = channelModule.create(loadConfig(CONFIGURED[name]).channels[name], {
        clock: systemClock,
        logger: silentLogger,
      });
      expect(adapter.channel).toBe(name);
      expect(adapter.markup).toBe(channelModule.markup);
      // Only the api channel settles access itself (its tokens); a chat platform's bot never does.
      if (name === "api") expect(adapter.admission?.ownAccessControl).toBe(true);
      else expect(adapter.admission).toBeUndefined();
    }
  });

  test("every secret variable of every module is redacted from log lines and configuration errors", () => {
    for (const name of PLATFORM_CHANNELS) {
      const env = CONFIGURED[name];
      const config = loadConfig(env);
      for (const variable of CHANNEL_MODULES[name].secretVariables) {
        const value = env[variable];
        if (value === undefined) throw new Error(`CONFIGURED.${name} must set ${variable}`);
        expect(config.secrets).toContain(value);
        const lines: string[] = [];
        createLogger({ secrets: config.secrets, write: (line) => lines.push(line) }).info("probe", {
          value,
        });
        expect(lines.join("\n")).not.toContain(value);
        expect(lines.join("\n")).toContain("[redacted]");
        expect(redactSecrets(`${variable}=${value} is wrong`, env)).toBe(`${variable}=[redacted] is wrong`);
      }
    }
  });

  test("a secret set for a channel that is not configured is redacted too", () => {
    const env = { TELEGRAM_WEBHOOK_SECRET: "a-webhook-secret-without-a-token" };
    expect(loadConfig(env).secrets).toContain("a-webhook-secret-without-a-token");
    expect(redactSecrets("got a-webhook-secret-without-a-token", env)).toBe("got [redacted]");
  });
});

describe("hand copies of CHANNEL_NAMES", () => {
  test("the console's search filter (browser code, which cannot import the list) offers every channel", () => {
    const source = readFileSync(
      join(import.meta.dir, "../../src/gateway/http/assets/console/search.ts"),
      "utf8",
    );
    const copy = /const CHANNELS = (\[[^\]]*\]) as const;/.exec(source)?.[1];
    expect(copy).toBeDefined();
    expect(JSON.parse(copy!)).toEqual([...CHANNEL_NAMES]);
  });
});
