/** The adapters of the accounts the configuration names, built from the registry's modules. */
import type { CommandMenu } from "../../channels/commands.ts";
import type { ChannelStateStore } from "../../channels/module.ts";
import type { ChannelAdapter } from "../../channels/types.ts";
import type { Clock } from "../util/clock.ts";
import { fail } from "../util/env.ts";
import type { Logger } from "../util/log.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "./channels.ts";
import {
  type AllowList,
  type ChannelAccount,
  DEFAULT_ACCOUNT,
  defaultAccount,
  type GatewayConfig,
} from "./config/index.ts";
import { allowListKey } from "./ingress-decision.ts";

export interface ConfiguredChannels {
  /**
   * One adapter per account, by slot: the channel for its `default` account (`telegram`), the
   * channel and name for a named one (`telegram:support`). Each is its own platform client, with
   * its own poller or webhook route, rate limits and readiness line.
   */
  adapters: Map<string, ChannelAdapter>;
  /**
   * Makes a new adapter (a new platform client) for the slot. A channel that failed to start is
   * tried again with a new one: some clients (discord.js) cannot log in a second time.
   */
  factories: Map<string, () => ChannelAdapter>;
  /** What each slot is: its channel and account name, for logs, readiness and metrics. */
  slots: Map<string, Pick<ChannelAccount, "channel" | "name">>;
  allowLists: GatewayConfig["allowLists"];
  /** The named accounts' allow lists, by allowListKey (ingress). */
  accountAllowLists: Map<string, AllowList>;
}

/** The slot of an account: its channel for `default`, `channel:name` otherwise. */
export function slotOf(account: Pick<ChannelAccount, "channel" | "name">): string {
  return account.name === DEFAULT_ACCOUNT ? account.channel : `${account.channel}:${account.name}`;
}

/**
 * Builds an adapter, and a factory for fresh ones, for every account the configuration names: each
 * configured channel's `default` account and the file's `accounts` (the web channel is added by
 * the app). Each adapter logs with its account's name.
 */
export function buildChannels(
  config: Pick<GatewayConfig, "channels" | "allowLists" | "accounts">,
  deps: { clock: Clock; logger: Logger; state?: ChannelStateStore; commands?: CommandMenu },
): ConfiguredChannels {
  const defaults = PLATFORM_CHANNELS.flatMap((name) =>
    Object.hasOwn(config.channels, name)
      ? [
          defaultAccount(
            name,
            config.channels[name],
            config.allowLists[name] ?? { kind: "ids", ids: new Set() },
          ),
        ]
      : [],
  );
  const factories = new Map<string, () => ChannelAdapter>();
  const slots = new Map<string, Pick<ChannelAccount, "channel" | "name">>();
  const accountAllowLists: ConfiguredChannels["accountAllowLists"] = new Map();
  for (const account of [...defaults, ...config.accounts]) {
    const slot = slotOf(account);
    const logger =
      account.name === DEFAULT_ACCOUNT ? deps.logger : deps.logger.child({ account: account.name });
    factories.set(slot, () => CHANNEL_MODULES[account.channel].create(account.settings, { ...deps, logger }));
    slots.set(slot, { channel: account.channel, name: account.name });
    if (account.name === DEFAULT_ACCOUNT) continue;
    if (account.accountId === null)
      throw new Error(
        `accounts.${account.channel}.${account.name}: ${account.channel} cannot tell an account's id from its settings, so it cannot have named accounts yet`,
      );
    accountAllowLists.set(allowListKey(account.channel, account.accountId), account.allowList);
  }
  const adapters = new Map([...factories].map(([slot, make]) => [slot, make()] as const));
  refuseSharedRoutes(adapters);
  return { adapters, factories, slots, allowLists: { ...config.allowLists }, accountAllowLists };
}

/**
 * Two accounts on one webhook route would take each other's updates: refused at start, unless the
 * route is one the channel's accounts share (HttpRoute.shared; see shared-routes.ts).
 */
function refuseSharedRoutes(adapters: ReadonlyMap<string, ChannelAdapter>): void {
  const owners = new Map<string, string>();
  const shared = new Set<string>();
  for (const [slot, adapter] of adapters)
    for (const route of adapter.routes?.() ?? []) {
      const key = `${route.method} ${route.path}`;
      const owner = owners.get(key);
      if (owner !== undefined && route.shared && shared.has(key)) continue;
      if (route.shared && owner === undefined) shared.add(key);
      if (owner !== undefined)
        fail(
          "SWITCHBOARD_CONFIG",
          `gives ${slot} the webhook route ${route.path}, which ${owner} already has; each account needs its own (an account's is /<channel>/webhook/<name>)`,
          "TELEGRAM_WEBHOOK_URL=https://bot.example.com/telegram/webhook",
        );
      owners.set(key, slot);
    }
}
