/**
 * The settings one conversation gets, and where each came from: the defaults, then `surfaces`
 * (`*:*`, `*:<surface>`, `<channel>:*`, `<channel>:<surface>`) and `models`, then the first
 * matching binding over them. Pure: `config explain`, the console and every engine read this.
 */
import { type Binding, type BindingFacts, firstMatchingBinding } from "./bindings.ts";
import { defaultModelName, type ModelsConfig, pickableModels } from "./models.ts";
import {
  type SurfaceOverride,
  type SurfacePolicy,
  surfaceOverrideSchema,
  surfacePolicy,
} from "./surfaces.ts";

export interface ConversationSettings extends SurfacePolicy {
  /**
   * The model the conversation uses until someone picks one with /model: a name from `models`,
   * a model spec (a binding's `model`), or null for the gateway's own (SWITCHBOARD_MODEL).
   */
  model: string | null;
  /** The models users may pick with /model here, by name: the file's `models`, with a binding's added. */
  models: Readonly<Record<string, string>>;
  /** The app tokens, by name, that may reach this conversation (a binding's `apps`; none without). */
  apps: readonly string[];
}

export type SettingName = keyof ConversationSettings;

/** Every setting, in the order `config explain` prints them: a surface's, then the models. */
export const SETTING_NAMES = [
  ...(Object.keys(surfaceOverrideSchema.shape) as Array<keyof SurfaceOverride>),
  "model",
  "models",
  "apps",
] as readonly SettingName[];

/** The parts of SWITCHBOARD_CONFIG the settings come from. */
export interface SettingsFile {
  surfaces: Readonly<Record<string, SurfaceOverride>>;
  models: ModelsConfig;
  bindings: readonly Binding[];
}

export interface SettingsExplanation {
  /** The index of the binding that matched; null: none did, the surfaces alone decided. */
  binding: number | null;
  settings: ConversationSettings;
  /**
   * Where each setting came from: `bindings.<i>`, `surfaces.<key>`, `models.default[.<key>]`,
   * `models`, or `default` (the built-in default; for `model`, SWITCHBOARD_MODEL).
   */
  sources: Record<SettingName, string>;
}

/** The settings of a conversation with these facts, and which binding, surface or default set each. */
export function explainSettings(file: SettingsFile, facts: BindingFacts): SettingsExplanation {
  const { channel, surface } = facts;
  const values: Record<string, unknown> = { ...surfacePolicy(file, channel, surface) };
  const sources = Object.fromEntries(SETTING_NAMES.map((name) => [name, "default"])) as Record<
    SettingName,
    string
  >;
  // The most specific surface key naming a setting is the one that set it (surfacePolicy's order).
  for (const key of ["*:*", `*:${surface}`, `${channel}:*`, `${channel}:${surface}`]) {
    const override = file.surfaces[key] ?? {};
    for (const [name, value] of Object.entries(override))
      if (value !== undefined) sources[name as SettingName] = `surfaces.${key}`;
  }
  values.model = defaultModelName(file, channel, surface);
  if (values.model !== null) {
    const fallback = file.models.default;
    sources.model =
      typeof fallback === "string" ? "models.default" : `models.default.${surfaceKeyOf(file.models, facts)}`;
  }
  values.apps = [];
  values.models = pickableModels(file);
  if (Object.keys(values.models as object).length > 0) sources.models = "models";

  const index = firstMatchingBinding(file.bindings, facts);
  if (index !== null) {
    const { match: _match, models, ...settings } = file.bindings[index]!;
    for (const [name, value] of Object.entries(settings)) {
      if (value === undefined) continue;
      values[name] = value;
      sources[name as SettingName] = `bindings.${index}`;
    }
    if (models) {
      values.models = { ...(values.models as object), ...models };
      // Merged: the file's names stay pickable beside the binding's.
      sources.models = sources.models === "default" ? `bindings.${index}` : `models + bindings.${index}`;
    }
  }
  return { binding: index, settings: values as unknown as ConversationSettings, sources };
}

/** The settings alone (see `explainSettings`). */
export function conversationSettings(file: SettingsFile, facts: BindingFacts): ConversationSettings {
  return explainSettings(file, facts).settings;
}

/** Which key of `models.default` gave the model (the same order as defaultModelName). */
function surfaceKeyOf(models: ModelsConfig, facts: BindingFacts): string {
  const fallback = models.default;
  if (typeof fallback !== "object") return "*:*";
  const keys = [`${facts.channel}:${facts.surface}`, `${facts.channel}:*`, `*:${facts.surface}`, "*:*"];
  return keys.find((key) => fallback[key] !== undefined) ?? "*:*";
}

/** Every name users may pick with /model somewhere, in config order: the file's `models`, then the bindings'. */
export function modelNamesOf(file: Pick<SettingsFile, "models" | "bindings">): string[] {
  return [
    ...new Set([
      ...Object.keys(pickableModels(file)),
      ...file.bindings.flatMap((b) => Object.keys(b.models ?? {})),
    ]),
  ];
}
