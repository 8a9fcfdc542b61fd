import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { AllowList, GatewayConfig } from "./config.ts";

export interface ConfiguredChannels {
  /** One adapter per configured channel, made by its factory. */
  adapters: Map<ChannelName, ChannelAdapter>;
  /**
   * Makes a new adapter (a new platform client) for the channel. A channel that failed to start
   * is tried again with a new one: some clients (discord.js) cannot log in a second time.
   */
  factories: Map<ChannelName, () => ChannelAdapter>;
  allowLists: Partial<Record<ChannelName, AllowList>>;
}

/*
 * Each platform's SDK is loaded when its channel is configured, not before: discord.js and Bolt
 * alone hold about 10 MB of heap (100,000 objects) that a gateway without them would carry, and
 * every full collection would mark, for nothing. Bun's require loads a module synchronously.
 */
const telegramChannel = (): typeof import("../../channels/telegram/index.ts") =>
  require("../../channels/telegram/index.ts");
const discordChannel = (): typeof import("../../channels/discord/index.ts") =>
  require("../../channels/discord/index.ts");
const slackChannel = (): typeof import("../../channels/slack/index.ts") =>
  require("../../channels/slack/index.ts");

/**
 * Builds an adapter, and a factory for fresh ones, for every channel the configuration names (the
 * web channel is added by the app).
 */
export function buildChannels(
  config: GatewayConfig,
  deps: { clock: Clock; logger: Logger },
): ConfiguredChannels {
  const factories = new Map<ChannelName, () => ChannelAdapter>();
  const allowLists: ConfiguredChannels["allowLists"] = {};
  const { clock, logger } = deps;
  if (config.telegram) {
    const t = config.telegram;
    factories.set(
      "telegram",
      () =>
        new (telegramChannel().TelegramAdapter)(
          {
            token: t.token,
            ...(t.apiRoot ? { apiRoot: t.apiRoot } : {}),
            requestTimeoutMs: t.requestTimeoutMs,
            ...(config.file.telegram.editedMessages
              ? { editedMessages: config.file.telegram.editedMessages }
              : {}),
            ...(config.file.telegram.groupSessions
              ? { groupSessions: config.file.telegram.groupSessions }
              : {}),
            ...(t.mode === "webhook"
              ? {
                  mode: "webhook",
                  webhookUrl: t.webhookUrl!,
                  webhookSecret: t.webhookSecret!,
                  webhookPath: t.webhookPath!,
                }
              : { mode: "polling" }),
          },
          {
            clock,
            onEvent: (event) => {
              const level =
                event.kind === "update_skipped"
                  ? "debug"
                  : event.kind === "polling_stopped"
                    ? "error"
                    : "warn";
              logger[level](`telegram.${event.kind}`, { ...event });
            },
          },
        ),
    );
    allowLists.telegram = t.allowed;
  }
  if (config.discord) {
    const d = config.discord;
    factories.set("discord", () =>
      discordChannel().createDiscordAdapter(
        {
          token: d.token,
          ...(d.apiUrl ? { apiUrl: d.apiUrl } : {}),
          allowBots: config.file.allowBots,
          requestTimeoutMs: d.requestTimeoutMs,
          ...(config.file.discord.groupSessions ? { groupSessions: config.file.discord.groupSessions } : {}),
        },
        { clock, logger },
      ),
    );
    allowLists.discord = d.allowed;
  }
  if (config.slack) {
    const s = config.slack;
    factories.set("slack", () =>
      slackChannel().createSlackAdapter(
        {
          mode: s.mode,
          botToken: s.botToken,
          allowOtherBots: config.file.allowBots,
          ...(s.apiUrl ? { apiUrl: s.apiUrl } : {}),
          ...(s.mode === "socket" ? { appToken: s.appToken } : { signingSecret: s.signingSecret }),
        },
        {
          clock,
          logger,
          onSkip: (skip) => logger.debug("slack.event_skipped", { ...skip }),
        },
      ),
    );
    allowLists.slack = s.allowed;
  }
  const adapters = new Map([...factories].map(([name, make]) => [name, make()] as const));
  return { adapters, factories, allowLists };
}
