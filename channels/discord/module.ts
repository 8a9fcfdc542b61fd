import { z } from "zod";
import { nonEmpty, parseIntegerField, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import type { ChannelModule } from "../module.ts";
import { type DiscordConfig, discordConfigSchema } from "./config.ts";

/** Loads discord.js with the adapter, only when a Discord adapter is built. */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

/** The `"discord"` section of the SWITCHBOARD_CONFIG file. */
const fileSection = z
  .object({ groupSessions: discordConfigSchema.shape.groupSessions.removeDefault().optional() })
  .strict();

/** Discord from DISCORD_*: one bot account on the gateway (WebSocket) and REST. */
export const discordModule: ChannelModule<DiscordConfig> = {
  name: "discord",
  fileSection,
  secretVariables: ["DISCORD_BOT_TOKEN"],
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

  create(config, { clock, logger, commands, state }) {
    return adapterModule().createDiscordAdapter(config, {
      clock,
      logger,
      ...(commands ? { commands } : {}),
      ...(state ? { state } : {}),
    });
  },
};
