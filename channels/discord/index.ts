export {
  createDiscordAdapter,
  DISCORD_CAPABILITIES,
  DISCORD_LIMITS,
  DiscordAdapter,
  type DiscordAdapterOptions,
} from "./adapter.ts";
export { CATCH_UP_MAX_MESSAGES_PER_CHANNEL, CATCH_UP_MAX_TARGETS, fetchMessagesAfter } from "./catch-up.ts";
export {
  type DiscordConfig,
  type DiscordConfigInput,
  discordConfigSchema,
  parseDiscordConfig,
} from "./config.ts";
export { toSwitchboardError } from "./errors.ts";
export { conversationKey, decodeTarget, encodeTarget } from "./keys.ts";
export {
  type DiscordMessageFacts,
  deletionToInbound,
  editToInbound,
  type ParseResult,
  readMessage,
  type SkipReason,
  toInbound,
} from "./parse.ts";
export { MAX_MESSAGE_CHARS, nonceFor } from "./send.ts";
