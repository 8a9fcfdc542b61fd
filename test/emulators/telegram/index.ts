export type { ApiAnswer, WebhookRegistration } from "./bot-api.ts";
export { MAX_MESSAGE_CHARS } from "./bot-api.ts";
export * from "./builders.ts";
export type { ChatState, MessageVersion, VisibleMessage } from "./chats.ts";
export { type EmulatorState, TelegramEmulatorRemote } from "./control.ts";
export {
  type ApiCall,
  DEFAULT_TOKEN,
  type IncomingSpec,
  startTelegramEmulator,
  TelegramEmulator,
  type TelegramEmulatorOptions,
} from "./emulator.ts";
export type { Fault } from "./faults.ts";
export { parseTelegramHtml } from "./html.ts";
export type { BotCommand } from "./menus.ts";
export { preciseNow, type RateLimitConfig, type RateLimitStats, TELEGRAM_RATE_LIMITS } from "./rate-limit.ts";
export type { WebhookAttempt } from "./webhook.ts";
