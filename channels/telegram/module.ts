import { z } from "zod";
import { fail, nonEmpty, parseIntegerField, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import { parseAccountSettings } from "../account-settings.ts";
import type { ChannelModule } from "../module.ts";
import { type TelegramConfig, telegramCommonFields, telegramConfigSchema } from "./config.ts";
import { accountOfTelegramKey } from "./conversation-key.ts";

/** Loads grammY with the adapter, only when a Telegram adapter is built. */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

const WEBHOOK_URL_EXAMPLE = "https://bot.example.com/telegram/webhook";
const SECRET_EXAMPLE = "$(openssl rand -hex 24)";

/** The `"telegram"` section of the SWITCHBOARD_CONFIG file. */
const fileSection = z
  .object({
    /**
     * The default of the Telegram surfaces' `edits` (what an edit after the answer becomes); the
     * gateway reads it from the file, the adapter passes every edit on.
     */
    editedMessages: z.enum(["ignore", "new-input"]).optional(),
    groupSessions: telegramCommonFields.groupSessions.removeDefault().optional(),
  })
  .strict();

/**
 * The keys one entry of `accounts.telegram` may have: TELEGRAM_*'s settings by their schema names
 * (the file section's `groupSessions` too). Polling unless `mode` is "webhook".
 */
const ACCOUNT_KEYS = [
  "token",
  "mode",
  "apiRoot",
  "requestTimeoutMs",
  "pollTimeoutSeconds",
  "webhookUrl",
  "webhookSecret",
  "groupSessions",
] as const;

/** An account's webhook route: one per bot, so each bot's updates reach its own adapter. */
export function accountWebhookPath(name: string): string {
  return `/telegram/webhook/${name}`;
}

/** One entry of `accounts.telegram`, checked by the adapter's schema; errors name the key, never its value. */
function telegramAccount(
  name: string,
  settings: Readonly<Record<string, unknown>>,
  section: Record<string, unknown>,
): TelegramConfig {
  const mode = settings.mode ?? "polling";
  const webhookPath = accountWebhookPath(name);
  const config = parseAccountSettings({
    channel: "telegram",
    name,
    keys: ACCOUNT_KEYS,
    settings,
    input: { ...section, ...settings, mode, ...(mode === "webhook" ? { webhookPath } : {}) },
    schema: telegramConfigSchema,
    example: ACCOUNT_EXAMPLE(name),
    rootKey: "mode",
    label: "Telegram",
  });
  if (config.mode === "webhook" && new URL(config.webhookUrl).pathname !== webhookPath)
    fail(
      "SWITCHBOARD_CONFIG",
      `accounts.telegram.${name}.webhookUrl must end in ${webhookPath}, the route of this account's updates`,
      `"webhookUrl": "https://bot.example.com${webhookPath}"`,
    );
  return config;
}

const ACCOUNT_EXAMPLE = (name: string) =>
  `"accounts": {"telegram": {"${name}": {"token": "\${TG_${name.toUpperCase()}}", "allowedUsers": "12345678"}}}`;

/** Telegram from TELEGRAM_*: polling by default, or a webhook with its URL and secret. */
export const telegramModule: ChannelModule<TelegramConfig> = {
  name: "telegram",
  fileSection,
  secretVariables: ["TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"],
  accountSecrets: ["token", "webhookSecret"],
  userIds: { pattern: /^\d{1,20}$/, what: "Telegram user ids are numbers", example: "12345678" },
  howToConnect: "TELEGRAM_BOT_TOKEN (from @BotFather)",
  markup: "telegram-html",

  fromEnv(env, file) {
    const token = nonEmpty(env, "TELEGRAM_BOT_TOKEN");
    if (!token) return null;
    const mode = nonEmpty(env, "TELEGRAM_MODE") ?? "polling";
    if (mode !== "polling" && mode !== "webhook")
      fail("TELEGRAM_MODE", `must be polling or webhook (got "${mode}")`, "TELEGRAM_MODE=polling");
    const webhookUrl = parseUrl(env, "TELEGRAM_WEBHOOK_URL", WEBHOOK_URL_EXAMPLE);
    const webhookSecret = nonEmpty(env, "TELEGRAM_WEBHOOK_SECRET");
    if (mode === "webhook") {
      if (!webhookUrl)
        fail(
          "TELEGRAM_WEBHOOK_URL",
          "must be set when TELEGRAM_MODE=webhook",
          `TELEGRAM_WEBHOOK_URL=${WEBHOOK_URL_EXAMPLE}`,
        );
      if (!webhookSecret)
        fail(
          "TELEGRAM_WEBHOOK_SECRET",
          "must be set when TELEGRAM_MODE=webhook",
          `TELEGRAM_WEBHOOK_SECRET=${SECRET_EXAMPLE}`,
        );
    }
    const apiRoot = parseUrl(env, "TELEGRAM_API_ROOT", "http://127.0.0.1:8081");
    const { editedMessages: _edits, ...section } = fileSection.parse(file.section ?? {});
    return parseWithSchema(
      telegramConfigSchema,
      {
        token,
        ...(apiRoot ? { apiRoot } : {}),
        requestTimeoutMs: parseIntegerField(
          env,
          "TELEGRAM_REQUEST_TIMEOUT_MS",
          telegramCommonFields.requestTimeoutMs,
          "a whole number of milliseconds",
        ),
        ...section,
        ...(mode === "webhook" && webhookUrl
          ? { mode, webhookUrl, webhookSecret, webhookPath: new URL(webhookUrl).pathname }
          : { mode: "polling" }),
      },
      {
        token: { variable: "TELEGRAM_BOT_TOKEN", example: "123456789:AAE…(from @BotFather)" },
        apiRoot: { variable: "TELEGRAM_API_ROOT", example: "http://127.0.0.1:8081" },
        webhookUrl: { variable: "TELEGRAM_WEBHOOK_URL", example: WEBHOOK_URL_EXAMPLE },
        webhookSecret: { variable: "TELEGRAM_WEBHOOK_SECRET", example: SECRET_EXAMPLE },
      },
    );
  },

  fromAccount(name, settings, file) {
    const { editedMessages: _edits, ...section } = fileSection.parse(file.section ?? {});
    return telegramAccount(name, settings, section);
  },

  accountIdOf: (config) => config.token.split(":")[0]!,
  accountOfKey: accountOfTelegramKey,

  create(config, { clock, logger, state, commands }) {
    return new (adapterModule().TelegramAdapter)(config, {
      clock,
      ...(commands ? { commands } : {}),
      ...(state ? { state } : {}),
      onEvent: (event) => {
        const level =
          event.kind === "update_skipped"
            ? "debug"
            : event.kind === "commands_registered" || event.kind === "commands_unchanged"
              ? "info"
              : event.kind === "polling_stopped"
                ? "error"
                : "warn";
        logger[level](`telegram.${event.kind}`, { ...event });
      },
    });
  },
};
