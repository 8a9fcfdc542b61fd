import { z } from "zod";
import { fail, nonEmpty, parseIntegerField, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import { parseAccountSettings } from "../account-settings.ts";
import type { ChannelModule } from "../module.ts";
import { type DiscordConfig, discordConfigSchema } from "./config.ts";
import { accountOfDiscordKey } from "./keys.ts";
import { botUserIdOfToken } from "./token.ts";

/** Loads discord.js with the adapter, only when a Discord adapter is built. */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

/** The `"discord"` section of the SWITCHBOARD_CONFIG file. */
const fileSection = z
  .object({ groupSessions: discordConfigSchema.shape.groupSessions.removeDefault().optional() })
  .strict();

/**
 * The keys one entry of `accounts.discord` may have: DISCORD_*'s settings by their schema names
 * (the file section's `groupSessions` too).
 */
const ACCOUNT_KEYS = ["token", "apiUrl", "requestTimeoutMs", "commandsGuildId", "groupSessions"] as const;

const ACCOUNT_EXAMPLE = (name: string) =>
  `"accounts": {"discord": {"${name}": {"token": "\${DISCORD_${name.toUpperCase()}}", "allowedUsers": "123456789012345678"}}}`;

/** Discord from DISCORD_*: one bot account on the gateway (WebSocket) and REST. */
export const discordModule: ChannelModule<DiscordConfig> = {
  name: "discord",
  fileSection,
  secretVariables: ["DISCORD_BOT_TOKEN"],
  accountSecrets: ["token"],
  userIds: {
    pattern: /^[A-Za-z0-9_.:@-]{1,64}$/,
    what: "Discord user ids are numbers",
    example: "123456789012345678",
  },
  howToConnect: "DISCORD_BOT_TOKEN (Discord developer portal; enable the Message Content intent)",
  markup: "discord-markdown",

  fromEnv(env, file) {
    const token = nonEmpty(env, "DISCORD_BOT_TOKEN");
    if (!token) return null;
    const apiUrl = parseUrl(env, "DISCORD_API_URL", "http://127.0.0.1:3000/api");
    const commandsGuildId = nonEmpty(env, "DISCORD_COMMANDS_GUILD");
    const section = fileSection.parse(file.section ?? {});
    return parseWithSchema(
      discordConfigSchema,
      {
        token,
        ...(apiUrl ? { apiUrl } : {}),
        requestTimeoutMs: parseIntegerField(
          env,
          "DISCORD_REQUEST_TIMEOUT_MS",
          discordConfigSchema.shape.requestTimeoutMs,
          "a whole number of milliseconds",
        ),
        allowBots: file.allowBots,
        ...(commandsGuildId ? { commandsGuildId } : {}),
        ...section,
      },
      {
        token: { variable: "DISCORD_BOT_TOKEN", example: "(the bot token from the developer portal)" },
        apiUrl: { variable: "DISCORD_API_URL", example: "http://127.0.0.1:3000/api" },
        commandsGuildId: { variable: "DISCORD_COMMANDS_GUILD", example: "123456789012345678" },
      },
    );
  },

  fromAccount(name, settings, file) {
    const config = parseAccountSettings({
      channel: "discord",
      name,
      keys: ACCOUNT_KEYS,
      settings,
      input: { ...fileSection.parse(file.section ?? {}), allowBots: file.allowBots, ...settings },
      schema: discordConfigSchema,
      example: ACCOUNT_EXAMPLE(name),
    });
    if (botUserIdOfToken(config.token) === null)
      fail(
        "SWITCHBOARD_CONFIG",
        `has accounts.discord.${name}.token, which is not a Discord bot token (its first part is the bot's user id in base64); copy the token from the developer portal's Bot page`,
        ACCOUNT_EXAMPLE(name),
      );
    return config;
  },

  accountIdOf: (config) => botUserIdOfToken(config.token),
  accountOfKey: accountOfDiscordKey,

  create(config, { clock, logger, commands, state }) {
    return adapterModule().createDiscordAdapter(config, {
      clock,
      logger,
      ...(commands ? { commands } : {}),
      ...(state ? { state } : {}),
    });
  },
};
