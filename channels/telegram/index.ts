export {
  TELEGRAM_CAPABILITIES,
  TELEGRAM_LIMITS,
  TelegramAdapter,
  type TelegramAdapterDeps,
} from "./adapter.ts";
export {
  parseTelegramConfig,
  type TelegramConfig,
  type TelegramConfigInput,
  telegramConfigSchema,
} from "./config.ts";
export type { TelegramAdapterEvent, TelegramEventSink } from "./events.ts";
export { type ParseContext, type ParseResult, parseUpdate } from "./parse.ts";

export { decodeTarget, encodeTarget, type TelegramTarget } from "./target.ts";
