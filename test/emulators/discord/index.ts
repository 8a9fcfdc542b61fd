export type { CommandRegistration, RegisteredCommand } from "./application-commands.ts";
export {
  DEFAULT_DISCORD_TOKEN,
  DiscordEmulator,
  type DiscordEmulatorOptions,
  type DiscordFileInput,
  discordBotToken,
  startDiscordEmulator,
} from "./emulator.ts";
export type { Fault, RestRoute } from "./faults.ts";
export type { GatewayLogEntry } from "./gateway.ts";
export {
  CALLBACK_TYPE,
  type CommandOptionInput,
  customIds,
  type EmulatedInteraction,
  INTERACTION_TOKEN_MS,
} from "./interactions.ts";
export type { ChannelRateLimit } from "./rate-limit.ts";
export type { RestCall } from "./rest.ts";
export type { GatewayMessage } from "./world.ts";
