import type { Logger as BoltLogger } from "@slack/bolt";
import { LogLevel } from "@slack/bolt";
import { createDiscordAdapter } from "../../channels/discord/index.ts";
import { createSlackAdapter } from "../../channels/slack/index.ts";
import { TelegramAdapter } from "../../channels/telegram/index.ts";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { AllowList, GatewayConfig } from "./config.ts";

export interface ConfiguredChannels {
  adapters: Map<ChannelName, ChannelAdapter>;
  allowLists: Partial<Record<ChannelName, AllowList>>;
}

/** Builds an adapter for every channel the configuration names (the web channel is added by the app). */
export function buildChannels(
  config: GatewayConfig,
  deps: { clock: Clock; logger: Logger },
): ConfiguredChannels {
  const adapters = new Map<ChannelName, ChannelAdapter>();
  const allowLists: ConfiguredChannels["allowLists"] = {};
  const { clock, logger } = deps;
  if (config.telegram) {
    const t = config.telegram;
    adapters.set(
      "telegram",
      new TelegramAdapter(
        {
          token: t.token,
          ...(t.apiRoot ? { apiRoot: t.apiRoot } : {}),
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
              event.kind === "update_skipped" ? "debug" : event.kind === "polling_stopped" ? "error" : "warn";
            logger[level](`telegram.${event.kind}`, { ...event });
          },
        },
      ),
    );
    allowLists.telegram = t.allowed;
  }
  if (config.discord) {
    const d = config.discord;
    adapters.set(
      "discord",
      createDiscordAdapter(
        {
          token: d.token,
          ...(d.apiUrl ? { apiUrl: d.apiUrl } : {}),
          allowBots: config.file.allowBots,
          ...(config.file.discord.groupSessions ? { groupSessions: config.file.discord.groupSessions } : {}),
        },
        { clock, log: (level, message, fields) => logger[level](`discord.${message}`, fields) },
      ),
    );
    allowLists.discord = d.allowed;
  }
  if (config.slack) {
    const s = config.slack;
    adapters.set(
      "slack",
      createSlackAdapter(
        {
          mode: s.mode,
          botToken: s.botToken,
          allowOtherBots: config.file.allowBots,
          ...(s.apiUrl ? { apiUrl: s.apiUrl } : {}),
          ...(s.mode === "socket" ? { appToken: s.appToken } : { signingSecret: s.signingSecret }),
        },
        {
          clock,
          logger: boltLogger(logger.child({ channel: "slack" })),
          onSkip: (skip) => logger.debug("slack.event_skipped", { ...skip }),
        },
      ),
    );
    allowLists.slack = s.allowed;
  }
  return { adapters, allowLists };
}

/** Bolt's logger interface over our structured logger (Bolt's debug chatter stays out). */
function boltLogger(logger: Logger): BoltLogger {
  let level = LogLevel.WARN;
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.message : String(a))).join(" ");
  return {
    debug: () => {},
    info: (...args) => {
      if (level === LogLevel.INFO || level === LogLevel.DEBUG)
        logger.info("slack.bolt", { message: text(args) });
    },
    warn: (...args) => logger.warn("slack.bolt", { message: text(args) }),
    error: (...args) => logger.error("slack.bolt", { message: text(args) }),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
