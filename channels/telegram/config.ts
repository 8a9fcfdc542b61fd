/**
 * Telegram channel options. Polling and webhook mode are separate shapes, so a webhook config
 * without its URL or secret (or a polling config carrying one) cannot be expressed.
 */
import { z } from "zod";
import { SwitchboardError } from "../../src/errors.ts";

/** The fields polling and webhook mode share; the gateway reads their bounds from here. */
export const telegramCommonFields = {
  /** Bot token from @BotFather (`<bot id>:<secret>`). Never logged. */
  token: z
    .string()
    .regex(/^\d+:[A-Za-z0-9_-]{20,}$/, "must be the bot token from @BotFather, shaped <bot id>:<secret>"),
  /** Bot API server root without a trailing slash. Default https://api.telegram.org. */
  apiRoot: z
    .url()
    .refine((url) => !url.endsWith("/"), "remove the trailing '/'")
    .default("https://api.telegram.org"),
  /** Whether members of a group share one conversation or each get their own. Default "shared". */
  groupSessions: z.enum(["shared", "per-user"]).default("shared"),
  /**
   * Upper bound on one Bot API call (long polls add their poll timeout): 100 ms (anything less
   * fails on a healthy network) to 120 s. Default 10 000 ms.
   */
  requestTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
};

const pollingConfig = z.object({
  mode: z.literal("polling"),
  ...telegramCommonFields,
  /** How long one getUpdates long poll waits for updates. Default 30 s (Telegram allows up to 50). */
  pollTimeoutSeconds: z.number().int().min(0).max(50).default(30),
});

const webhookConfig = z.object({
  mode: z.literal("webhook"),
  ...telegramCommonFields,
  /** The public HTTPS URL Telegram POSTs updates to; it must reach `webhookPath` on the gateway. */
  webhookUrl: z.url(),
  /** Sent back by Telegram in X-Telegram-Bot-Api-Secret-Token; 16–256 of A-Z a-z 0-9 _ -. */
  webhookSecret: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,256}$/, "must be 16 to 256 characters of A-Z, a-z, 0-9, _ and -"),
  /** The gateway route that receives updates. Default /telegram/webhook. */
  webhookPath: z.string().startsWith("/", "must start with '/'").default("/telegram/webhook"),
});

export const telegramConfigSchema = z.discriminatedUnion("mode", [pollingConfig, webhookConfig]);

export type TelegramConfig = z.output<typeof telegramConfigSchema>;
export type TelegramConfigInput = z.input<typeof telegramConfigSchema>;
export type TelegramPollingConfig = Extract<TelegramConfig, { mode: "polling" }>;
export type TelegramWebhookConfig = Extract<TelegramConfig, { mode: "webhook" }>;

/** Validates options; the error names each bad field (never its value, so the token stays out of logs). */
export function parseTelegramConfig(input: unknown): TelegramConfig {
  const result = telegramConfigSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map(
    (issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`,
  );
  throw new SwitchboardError("config_invalid", `Invalid Telegram channel config: ${problems.join("; ")}`, {
    details: { fields: result.error.issues.map((issue) => issue.path.join(".")) },
  });
}
