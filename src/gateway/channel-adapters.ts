/** The adapters of the channels the configuration names, built from the registry's modules. */
import type { CommandMenu } from "../../channels/commands.ts";
import type { ChannelStateStore } from "../../channels/module.ts";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "./channels.ts";
import type { AllowList, GatewayConfig } from "./config/index.ts";

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

/**
 * Builds an adapter, and a factory for fresh ones, for every channel the configuration names (the
 * web channel is added by the app).
 */
export function buildChannels(
  config: GatewayConfig,
  deps: { clock: Clock; logger: Logger; state?: ChannelStateStore; commands?: CommandMenu },
): ConfiguredChannels {
  const factories = new Map<ChannelName, () => ChannelAdapter>();
  for (const name of PLATFORM_CHANNELS) {
    if (!Object.hasOwn(config.channels, name)) continue;
    const settings = config.channels[name];
    factories.set(name, () => CHANNEL_MODULES[name].create(settings, deps));
  }
  const adapters = new Map([...factories].map(([name, make]) => [name, make()] as const));
  return { adapters, factories, allowLists: { ...config.allowLists } };
}
