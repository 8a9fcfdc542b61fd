/**
 * `accounts` in SWITCHBOARD_CONFIG: several bots of one platform in one gateway, each by name. An
 * account's settings are its channel's (read by the channel module's `fromAccount`), with secrets
 * only as `${VAR}` references, expanded here at start. The variables' bot is the account `default`.
 */
import type { PlatformChannel } from "../../../channels/module.ts";
import { type Env, fail } from "../../util/env.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "../channels.ts";
import type { AccountNames } from "./accounts-schema.ts";
import { DEFAULT_ACCOUNT } from "./bindings.ts";
import { parseAllowList } from "./channels.ts";
import type { FileConfig } from "./file.ts";
import type { SecretCollector } from "./secrets.ts";
import type { AllowList, ChannelAccount } from "./types.ts";

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The named accounts of `file.accounts`, checked by their modules. `defaults`: the accounts the
 * variables configure, whose ids a named account must not repeat. Throws `config_invalid`
 * (exit 78) naming `accounts.<channel>.<name>[.<key>]`; no message carries a secret's value.
 */
export function loadAccounts(
  env: Env,
  file: FileConfig,
  secrets: SecretCollector,
  defaults: readonly ChannelAccount[],
): ChannelAccount[] {
  const accounts: ChannelAccount[] = [];
  for (const channel of PLATFORM_CHANNELS) {
    const entries = Object.entries(file.accounts[channel] ?? {});
    if (entries.length === 0) continue;
    const channelModule = CHANNEL_MODULES[channel];
    if (!channelModule.fromAccount)
      fail(
        "SWITCHBOARD_CONFIG",
        `has accounts.${channel}, but ${channel} has one account so far (its ${channelModule.howToConnect}); named accounts exist for ${PLATFORM_CHANNELS.filter((c) => CHANNEL_MODULES[c].fromAccount).join(", ")}`,
        '"accounts": {"telegram": {"personal": {"token": "${TG_PERSONAL}"}}}',
      );
    for (const [name, raw] of entries) {
      const where = `accounts.${channel}.${name}`;
      if (name === DEFAULT_ACCOUNT)
        fail(
          "SWITCHBOARD_CONFIG",
          `has ${where}: "default" is the account the ${channel.toUpperCase()}_* variables configure; give this one another name`,
          `"accounts": {"${channel}": {"personal": {…}}}`,
        );
      const { allowedUsers, ...rest } = expandReferences(
        env,
        where,
        raw,
        channelModule.accountSecrets ?? [],
        secrets,
      );
      const allowedText = allowedUsersText(where, allowedUsers);
      const settings = channelModule.fromAccount(name, rest, {
        section: file[channel] ?? {},
        allowBots: file.allowBots,
        ...(allowedText === undefined ? {} : { allowedUsers: allowedText }),
      });
      accounts.push({
        channel,
        name,
        settings,
        allowList: parseAllowList(allowedText, `${where}.allowedUsers`, channelModule.userIds),
        accountId: channelModule.accountIdOf?.(settings) ?? null,
      });
    }
  }
  refuseUnknownIds(defaults, accounts);
  refuseRepeatedBots([...defaults, ...accounts]);
  return accounts;
}

/** The variables' account of a configured channel, as a ChannelAccount. */
export function defaultAccount(
  channel: PlatformChannel,
  settings: unknown,
  allowList: AllowList,
): ChannelAccount {
  return {
    channel,
    name: DEFAULT_ACCOUNT,
    settings,
    allowList,
    accountId: CHANNEL_MODULES[channel].accountIdOf?.(settings) ?? null,
  };
}

/** The names of the accounts whose ids are known, by channel: what binding facts are matched on. */
export function accountNamesOf(accounts: readonly ChannelAccount[]): AccountNames {
  const names: Partial<Record<PlatformChannel, Record<string, string>>> = {};
  for (const { channel, name, accountId } of accounts) {
    if (accountId === null) continue;
    names[channel] = { ...names[channel], [accountId]: name };
  }
  return names;
}

/**
 * The account names a binding may match on each channel: `default` (the variables' bot, which a
 * binding may name whether or not it is configured) and the names the file gives.
 */
export function accountNamesInFile(file: Pick<FileConfig, "accounts">): (channel: string) => string[] {
  return (channel) => [DEFAULT_ACCOUNT, ...Object.keys(file.accounts[channel as PlatformChannel] ?? {})];
}

/**
 * `${VAR}`s in every string replaced by the variable's value (kept as a secret); a key in `secretKeys`
 * must be nothing but a reference, so a token never sits in the file. Errors name the key and the
 * variable, never a value.
 */
function expandReferences(
  env: Env,
  where: string,
  raw: Readonly<Record<string, unknown>>,
  secretKeys: readonly string[],
  secrets: SecretCollector,
): Record<string, unknown> {
  const expanded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value !== "string") {
      if (secretKeys.includes(key))
        fail("SWITCHBOARD_CONFIG", `${where}.${key} must be a \${VAR} reference`, `"${key}": "\${TG_TOKEN}"`);
      expanded[key] = value;
      continue;
    }
    if (secretKeys.includes(key) && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value.trim()))
      fail(
        "SWITCHBOARD_CONFIG",
        `${where}.${key} holds a secret, so it must be a \${VAR} reference to an environment variable, not the value itself`,
        `"${key}": "\${${where.split(".").slice(1).join("_").toUpperCase()}_${key.toUpperCase()}}"`,
      );
    expanded[key] = value.replace(REFERENCE, (_match, variable: string) => {
      const resolved = secretKeys.includes(key) ? secrets.read(variable) : env[variable]?.trim();
      if (!resolved)
        fail(
          "SWITCHBOARD_CONFIG",
          `${where}.${key} refers to \${${variable}}, which is unset or empty; set ${variable} in the gateway's environment`,
          `${variable}=…`,
        );
      return resolved;
    });
  }
  return expanded;
}

/** `allowedUsers` as an account has it: the variable's syntax ("*", "pairing,123") or a list of ids. */
function allowedUsersText(where: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((item) => typeof item === "string" || typeof item === "number"))
    return value.join(",");
  fail(
    "SWITCHBOARD_CONFIG",
    `${where}.allowedUsers must be a string of ids ("*", "pairing,12345678") or a list of ids`,
    '"allowedUsers": ["12345678"]',
  );
}

/** How the variables' account of a channel tells its id: what refuseUnknownIds asks for. */
const ID_HINTS: Partial<Record<PlatformChannel, [string, string]>> = {
  matrix: ["set MATRIX_USER_ID", "MATRIX_USER_ID=@bot:example.org"],
  slack: ["set SLACK_TEAM_ID and SLACK_APP_ID", "SLACK_TEAM_ID=T0123ABCD SLACK_APP_ID=A0123ABCD"],
  discord: [
    "set DISCORD_BOT_TOKEN to the bot's token as the developer portal shows it (its first part is the bot's id)",
    "DISCORD_BOT_TOKEN=MTIz…(from the developer portal)",
  ],
};

/**
 * Beside named accounts, a `default` account must tell its bot's id from its settings too: a reply
 * routes by that id, also while its adapter has not started, and bindings name it by that id.
 */
function refuseUnknownIds(defaults: readonly ChannelAccount[], named: readonly ChannelAccount[]): void {
  for (const account of defaults) {
    if (account.accountId !== null || !named.some((other) => other.channel === account.channel)) continue;
    const prefix = account.channel.toUpperCase();
    const [hint, example] = ID_HINTS[account.channel] ?? [
      `set the bot's own token in ${prefix}_*`,
      `${prefix}_…=(the bot's token)`,
    ];
    fail(
      "SWITCHBOARD_CONFIG",
      `has accounts.${account.channel}, but the ${account.channel} account default (the ${prefix}_* variables) does not tell its bot's id before it starts, so its replies could not be told apart from the named accounts'; ${hint}`,
      example,
    );
  }
}

/** Two accounts that are one bot would answer each message twice and share one rate limit. */
function refuseRepeatedBots(accounts: readonly ChannelAccount[]): void {
  const seen = new Map<string, string>();
  for (const { channel, name, accountId } of accounts) {
    if (accountId === null) continue;
    const key = `${channel}:${accountId}`;
    const before = seen.get(key);
    if (before !== undefined)
      fail(
        "SWITCHBOARD_CONFIG",
        `has accounts.${channel}.${name}, which is the same ${channel} bot (${accountId}) as the account ${before}; give each account its own bot`,
        `"accounts": {"${channel}": {"${name}": {"token": "\${ANOTHER_BOT_TOKEN}"}}}`,
      );
    seen.set(key, name);
  }
}
