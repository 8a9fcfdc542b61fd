/**
 * Bindings: an ordered list of `{ match, ...settings }` in SWITCHBOARD_CONFIG. The first binding
 * whose `match` fits a conversation sets what it names over the surface's policy; `surfaces` are
 * the last, general rule. Matching and checking are pure functions of the list and the facts.
 */
import { z } from "zod";
import { APP_NAME } from "../../../channels/api/keys.ts";
import { CHANNEL_NAMES, type ChannelName, SURFACE_KINDS, type SurfaceKind } from "../../../channels/types.ts";
import { fail } from "../../util/env.ts";
import { MODEL_NAME, modelSpecSchema } from "./models.ts";
import { surfaceOverrideSchema } from "./surfaces.ts";

/** The keys of a binding's `match`, in the order `config explain` and the docs list them. */
export const BINDING_MATCH_KEYS = [
  "channel",
  "account",
  "team",
  "guild",
  "chat",
  "user",
  "role",
  "surface",
] as const;
export type BindingMatchKey = (typeof BINDING_MATCH_KEYS)[number];

/** The only channel where a match key can be true; keys absent here exist on every channel. */
const ONLY_ON: Partial<Record<BindingMatchKey, ChannelName>> = {
  team: "slack",
  guild: "discord",
  role: "discord",
};

const platformId = z.string().min(1).max(200);

/** What a binding matches: every key given must hold (an empty match holds everywhere). */
export const bindingMatchSchema = z
  .object({
    channel: z.enum(CHANNEL_NAMES).optional(),
    /** The account's name in `accounts` (`default`: the one the environment variables configure). */
    account: z.string().min(1).max(64).optional(),
    /** A Slack workspace (team) id, `T…`. */
    team: platformId.optional(),
    /** A Discord server (guild) id. */
    guild: platformId.optional(),
    /** A chat, channel or room id (a thread's or topic's is its chat's). */
    chat: platformId.optional(),
    /** The platform user id of who wrote. */
    user: platformId.optional(),
    /** A Discord role id the author holds. */
    role: platformId.optional(),
    surface: z.enum(SURFACE_KINDS).optional(),
  })
  .strict();
export type BindingMatch = z.output<typeof bindingMatchSchema>;

/**
 * One binding: a match and the settings it sets, which are a surface's (`surfaces`) plus `model`
 * (a name from `models`, or a model spec), `models` (names users may pick with /model here) and
 * `apps` (the app tokens, by name, that may reach the conversations it matches and send to them).
 */
export const bindingSchema = surfaceOverrideSchema
  .extend({
    match: bindingMatchSchema,
    model: z.string().min(1).max(300).optional(),
    models: z
      .record(z.string().regex(MODEL_NAME, 'a model name (lowercase, e.g. "smart")'), modelSpecSchema)
      .optional(),
    apps: z.array(z.string().regex(APP_NAME, "an app's name in SWITCHBOARD_APP_TOKENS")).max(100).optional(),
  })
  .strict();
export type Binding = z.output<typeof bindingSchema>;

/** What a conversation is, as bindings match it; absent facts never match a key that names them. */
export interface BindingFacts {
  channel: ChannelName;
  /** The account's name (`default` for the bot the environment variables configure). */
  account: string;
  surface: SurfaceKind;
  user?: string;
  chat?: string;
  team?: string;
  guild?: string;
  roles?: readonly string[];
}

/**
 * Facts that may lack a surface too: a proactive send's target is a chat whose surface the gateway
 * does not know. A match naming `surface` never holds for them.
 */
export type MatchFacts = Omit<BindingFacts, "surface"> & { surface?: SurfaceKind };

/** Whether every key of `match` holds for `facts`. */
export function bindingMatches(match: BindingMatch, facts: MatchFacts): boolean {
  return (
    (match.channel === undefined || match.channel === facts.channel) &&
    (match.account === undefined || match.account === facts.account) &&
    (match.team === undefined || match.team === facts.team) &&
    (match.guild === undefined || match.guild === facts.guild) &&
    (match.chat === undefined || match.chat === facts.chat) &&
    (match.user === undefined || match.user === facts.user) &&
    (match.role === undefined || (facts.roles ?? []).includes(match.role)) &&
    (match.surface === undefined || match.surface === facts.surface)
  );
}

/** The index of the first binding that matches, or null: the surfaces alone decide. */
export function firstMatchingBinding(
  bindings: readonly Pick<Binding, "match">[],
  facts: MatchFacts,
): number | null {
  const index = bindings.findIndex((binding) => bindingMatches(binding.match, facts));
  return index < 0 ? null : index;
}

/**
 * A binding the configuration must refuse: where (`bindings.<index>.match.<key>`, or
 * `bindings.<index>.<key>` for a setting such as `apps`) and why.
 */
export interface BindingProblem {
  index: number;
  key: string;
  message: string;
}

/**
 * What is wrong with the list: a key that names something unknown (an account the channel does not
 * have, `team` off Slack), and a binding that never matches because an earlier one holds whenever
 * it does (the earlier match's keys are a subset of its own, with the same values).
 * `accounts(channel)`: the account names configured on `channel`; `apps`: the names of
 * SWITCHBOARD_APP_TOKENS, when known (an `apps` entry must be one of them).
 */
export function bindingProblems(
  bindings: readonly Pick<Binding, "match" | "apps">[],
  accounts: (channel: ChannelName) => readonly string[],
  apps?: readonly string[],
): BindingProblem[] {
  const problems: BindingProblem[] = [];
  for (const [index, { match, apps: named }] of bindings.entries()) {
    for (const [key, channel] of Object.entries(ONLY_ON) as Array<[BindingMatchKey, ChannelName]>) {
      if (match[key] === undefined || match.channel === channel) continue;
      problems.push({
        index,
        key,
        message: `"${key}" exists only on ${channel}; add "channel": "${channel}" to this match (or remove "${key}")`,
      });
    }
    if (match.account !== undefined) {
      const channels = match.channel === undefined ? CHANNEL_NAMES : [match.channel];
      const known = [...new Set(channels.flatMap((channel) => accounts(channel)))];
      if (!known.includes(match.account))
        problems.push({
          index,
          key: "account",
          message: `"${match.account}" is not an account of ${match.channel ?? "any channel"}; accounts: ${known.join(", ") || "none"}`,
        });
    }
    const unknownApps = apps === undefined ? [] : (named ?? []).filter((name) => !apps.includes(name));
    if (unknownApps.length > 0)
      problems.push({
        index,
        key: "apps",
        message: `${unknownApps.map((name) => `"${name}"`).join(", ")} ${unknownApps.length === 1 ? "is not an app" : "are not apps"} of SWITCHBOARD_APP_TOKENS; apps: ${apps!.join(", ") || "none"}`,
      });
    const earlier = bindings.slice(0, index).findIndex((before) => covers(before.match, match));
    if (earlier >= 0)
      problems.push({
        index,
        key: "match",
        message: `never matches: bindings.${earlier} matches every conversation this one does and comes first; put this binding before it, or narrow bindings.${earlier}`,
      });
  }
  return problems;
}

/** True when `general` holds wherever `specific` does: each of its keys is in `specific`, equal. */
function covers(general: BindingMatch, specific: BindingMatch): boolean {
  return BINDING_MATCH_KEYS.every((key) => general[key] === undefined || general[key] === specific[key]);
}

/**
 * The one account every channel has until `accounts` are configured: the bot the environment
 * variables (TELEGRAM_BOT_TOKEN, …) set up.
 */
export const DEFAULT_ACCOUNT = "default";

/** Each problem as `bindings.<i>.match[.<key>]: why` (`bindings.<i>.<key>` for a setting), as start-up errors print. */
export function describeBindingProblems(problems: readonly BindingProblem[]): string {
  return problems
    .map(({ index, key, message }) => `bindings.${index}${problemPath(key)}: ${message}`)
    .join("; ");
}

function problemPath(key: string): string {
  if (key === "match") return ".match";
  return (BINDING_MATCH_KEYS as readonly string[]).includes(key) ? `.match.${key}` : `.${key}`;
}

/**
 * Refuses the start (`config_invalid`, exit 78) when a binding names an unknown account or app, or
 * a key its channel does not have, or can never match. `accounts(channel)`: the accounts configured
 * there; `apps`: the names of SWITCHBOARD_APP_TOKENS (unchecked when not given).
 */
export function checkBindings(
  bindings: readonly Pick<Binding, "match" | "apps">[],
  accounts: (channel: ChannelName) => readonly string[],
  apps?: readonly string[],
): void {
  const problems = bindingProblems(bindings, accounts, apps);
  if (problems.length > 0)
    fail(
      "SWITCHBOARD_CONFIG",
      `has bindings that cannot work: ${describeBindingProblems(problems)}`,
      '"bindings": [{"match": {"channel": "telegram", "chat": "-1001234"}, "inputPolicy": "queue"}]',
    );
}
