/**
 * `switchboard config explain` and the console's settings view: the settings a conversation gets,
 * each with its value as text and what set it (a binding, a surface, `models`, or the default).
 */
import type { Env } from "../../util/env.ts";
import { nonEmpty } from "../../util/env.ts";
import { accountNamesInFile } from "./accounts.ts";
import { parseAgentDirs } from "./agent.ts";
import { APP_TOKENS_ENV, parseAppTokens } from "./app-tokens.ts";
import { BINDING_MATCH_KEYS, type BindingFacts, checkBindings } from "./bindings.ts";
import {
  type ConversationSettings,
  explainSettings,
  SETTING_NAMES,
  type SettingName,
  type SettingsFile,
} from "./conversation-settings.ts";
import { readFileConfig } from "./file.ts";
import { parseOperatorAccess } from "./tokens.ts";

export interface ExplainedConversation {
  facts: BindingFacts;
  /** The facts as one line: `telegram, account default, dm, chat 42`. */
  conversation: string;
  /** The index of the binding that matched; null: none did. */
  binding: number | null;
  /** That binding's match as `key=value` pairs; null when none matched. */
  bindingMatch: string | null;
  settings: ConversationSettings;
  sources: Record<SettingName, string>;
  /** One row per setting, its value as text, in the order of SETTING_NAMES. */
  rows: Array<{ setting: SettingName; value: string; source: string }>;
  /** What the operator should know: an account that is not configured. */
  notes: string[];
}

/**
 * The explanation for `facts` under `file`. `agentDir`: SWITCHBOARD_AGENT_DIR, shown where no
 * surface or binding names one; `accounts(channel)`: the configured account names.
 */
export function describeSettings(
  file: SettingsFile,
  facts: BindingFacts,
  agentDir: string,
  accounts: (channel: BindingFacts["channel"]) => readonly string[],
): ExplainedConversation {
  const { binding, settings, sources } = explainSettings(file, facts);
  const match = binding === null ? null : file.bindings[binding]!.match;
  const notes = accounts(facts.channel).includes(facts.account)
    ? []
    : [
        `${facts.channel} has no account "${facts.account}" (accounts: ${accounts(facts.channel).join(", ")}); no message can come from it`,
      ];
  return {
    facts,
    conversation: describeFacts(facts),
    binding,
    bindingMatch:
      match === null
        ? null
        : BINDING_MATCH_KEYS.filter((key) => match[key] !== undefined)
            .map((key) => `${key}=${match[key]}`)
            .join(" ") || "(everything)",
    settings,
    sources,
    rows: SETTING_NAMES.map((setting) => ({
      setting,
      value: valueText(setting, settings, agentDir),
      source: sources[setting],
    })),
    notes,
  };
}

/** Reads SWITCHBOARD_CONFIG as `switchboard start` does (refusing what it refuses) and explains `facts`. */
export function explainConversation(env: Env, facts: BindingFacts): ExplainedConversation {
  const { file, baseDir } = readFileConfig(nonEmpty(env, "SWITCHBOARD_CONFIG"));
  // Bindings' `apps` are checked against the app tokens when this environment has them, as at start.
  const apps =
    nonEmpty(env, APP_TOKENS_ENV) === undefined
      ? undefined
      : parseAppTokens(env, parseOperatorAccess(env)).map((app) => app.name);
  checkBindings(file.bindings, accountNamesInFile(file), apps);
  const agentDir = parseAgentDirs(env, file, baseDir);
  return describeSettings(file, facts, agentDir, accountNamesInFile(file));
}

function describeFacts(facts: BindingFacts): string {
  const parts: string[] = [facts.channel, `account ${facts.account}`, facts.surface];
  if (facts.team !== undefined) parts.push(`team ${facts.team}`);
  if (facts.guild !== undefined) parts.push(`guild ${facts.guild}`);
  if (facts.chat !== undefined) parts.push(`chat ${facts.chat}`);
  if (facts.user !== undefined) parts.push(`user ${facts.user}`);
  if (facts.roles !== undefined && facts.roles.length > 0) parts.push(`roles ${facts.roles.join(",")}`);
  return parts.join(", ");
}

/** A setting's value as one line; absent ones say what absent means. */
function valueText(setting: SettingName, settings: ConversationSettings, agentDir: string): string {
  const value = settings[setting];
  switch (setting) {
    case "tools":
      return value === undefined ? "all tool sets" : (value as string[]).join(", ") || "none";
    case "agentDir":
      return (value as string | undefined) ?? agentDir;
    case "historyScope":
      return (value as string | undefined) ?? "user";
    case "instructions":
      return value === undefined ? "none" : JSON.stringify(value);
    case "approvers":
    case "apps":
      return (value as string[]).join(", ") || "none";
    case "model":
      return (value as string | null) ?? "the gateway's model (SWITCHBOARD_MODEL)";
    case "models": {
      const entries = Object.entries(value as Record<string, string>);
      return entries.length === 0 ? "none" : entries.map(([name, spec]) => `${name}=${spec}`).join(", ");
    }
    default:
      return value === undefined ? "-" : String(value);
  }
}
