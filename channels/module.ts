/**
 * What a channel tells the gateway about itself: how it is configured from the environment, what
 * of that is secret, what its user ids look like, how to connect it, and how to build its adapter.
 * The gateway iterates one registry of these (src/gateway/channels.ts) and names no platform.
 *
 * A module file must not load its platform's SDK: the gateway reads every module's `fromEnv` at
 * startup, configured or not. `create()` loads the adapter (and with it the SDK) on first use.
 */
import type { z } from "zod";
import type { Clock } from "../src/util/clock.ts";
import type { Env } from "../src/util/env.ts";
import type { Logger } from "../src/util/log.ts";
import type { CommandMenu } from "./commands.ts";
import type { ChannelAdapter, ChannelName, MarkupDialect } from "./types.ts";

/** The channels configured from `<PLATFORM>_*` variables; the web chat is built by the gateway itself. */
export type PlatformChannel = Exclude<ChannelName, "web">;

/** What the SWITCHBOARD_CONFIG file says to a channel. */
export interface ChannelFileSettings {
  /** The channel's own section (`"telegram": {…}`), already validated by its `fileSection`; {} when absent. */
  section: unknown;
  /** `allowBots`: hand messages written by other bots to ingress (the bot's own never are). */
  allowBots: boolean;
  /**
   * For `fromAccount`: the account's `allowedUsers` in the variable's syntax ("*", "pairing,…",
   * ids), which the gateway applies to messages; for adapters that act on it themselves (Matrix
   * joins rooms only for these users). Absent: none given.
   */
  allowedUsers?: string;
}

/**
 * Small values a channel keeps in the gateway's database across restarts, by name (Matrix's sync
 * token, saved only after the events it covers were admitted, and its login).
 */
export interface ChannelStateStore {
  loadChannelState(name: string): Promise<string | null>;
  saveChannelState(name: string, value: string, nowMs: number): Promise<void>;
}

/** What an adapter is built with besides its config. */
export interface ChannelDeps {
  clock: Clock;
  logger: Logger;
  /** The gateway's database, for channels whose cursor the platform does not keep (Matrix). */
  state?: ChannelStateStore;
  /** The chat commands, for channels that register them in the platform's menu; absent: none registered. */
  commands?: CommandMenu;
}

export interface ChannelModule<Config> {
  readonly name: PlatformChannel;
  /**
   * Reads the channel's `<PLATFORM>_*` variables (except `<PLATFORM>_ALLOWED_USERS`, which the
   * gateway reads with `userIds`) and validates them with the adapter's own schema; null when the
   * channel is not configured (its token is unset). Throws `config_invalid` naming the variable.
   */
  fromEnv(env: Env, file: ChannelFileSettings): Config | null;
  /** The channel's section of the SWITCHBOARD_CONFIG file, when it has one (a strict object). */
  readonly fileSection?: z.ZodObject;
  /** Keys of an `accounts` entry that hold secrets: only a `${VAR}` reference is accepted there. */
  readonly accountSecrets?: readonly string[];
  /** Variables whose values are secrets: kept out of every log line and error message. */
  readonly secretVariables: readonly string[];
  /** What the platform's user ids look like, to refuse a user name in `<PLATFORM>_ALLOWED_USERS`. */
  readonly userIds: { pattern: RegExp; what: string; example: string };
  /** The variables to set to connect the channel, and where their values come from (startup log). */
  readonly howToConnect: string;
  /** The markup the adapter sends; the same as its adapter's `markup`. */
  readonly markup: MarkupDialect;
  /**
   * Reads one account of the file's `accounts.<channel>` (its `${VAR}` references already
   * expanded, `allowedUsers` taken out by the gateway): the same settings as the variables, checked
   * by the adapter's schema. Absent: the channel has only the account its variables configure.
   * Throws `config_invalid` naming `accounts.<channel>.<name>.<key>`, never a value.
   */
  fromAccount?(name: string, settings: Readonly<Record<string, unknown>>, file: ChannelFileSettings): Config;
  /**
   * The platform account id (`ChannelAdapter.account`) a config connects, when the config alone
   * tells it (Telegram: the token's bot id). The gateway maps it to the account's name and refuses
   * two accounts that are one bot. Absent, or null for a config that does not tell: known only
   * once the adapter started, which a channel with named accounts does not allow.
   */
  accountIdOf?(config: Config): string | null;
  /**
   * The account id a conversation key of this channel belongs to (keys are the adapter's own
   * encoding); null when the key does not say. Absent: the channel's keys are not decoded.
   */
  accountOfKey?(conversationKey: string): string | null;
  /** A new adapter (a new platform client: a channel that failed to start gets a fresh one). */
  create(config: Config, deps: ChannelDeps): ChannelAdapter;
}
