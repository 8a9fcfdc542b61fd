import type { ModelRegistry, ResolvedModel } from "../models/registry.ts";
import { readRunContext } from "../run-context.ts";
import type { ModelEntry } from "../runtime/step.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import type { Clock } from "../util/clock.ts";
import { bindingFactsOf } from "./binding-facts.ts";
import {
  type BindingFacts,
  conversationSettings,
  type FileConfig,
  modelNamesOf,
  pickableModels,
} from "./config/index.ts";

/** The model a conversation uses: a name from `models`, or null for the gateway's own model. */
export interface CurrentModel {
  name: string | null;
  /** True when the conversation picked it with /model (or an operator set it). */
  chosen: boolean;
}

/**
 * Which model a conversation's runs use: its /model choice while that name is still pickable
 * there, else the default (a binding's `model`, the surface's `models.default`), else null
 * (SWITCHBOARD_MODEL). Pure.
 */
export function effectiveModel(
  stored: string | undefined,
  /** The default here, a name or spec the registry knows; null: the gateway's own model. */
  fallback: string | null,
  /** The names users may pick here. */
  names: readonly string[],
): CurrentModel {
  if (stored !== undefined && names.includes(stored)) return { name: stored, chosen: true };
  return { name: fallback, chosen: false };
}

/** The chosen model first, then the configured fallbacks (SWITCHBOARD_FALLBACK_MODELS) it is not. */
export function chainWith(chosen: ResolvedModel, chain: readonly ResolvedModel[]): ResolvedModel[] {
  return [chosen, ...chain.slice(1).filter((m) => m.spec !== chosen.spec)];
}

export interface ModelChoices {
  /** Every pickable name, in config order: the file's `models`, then the bindings'. */
  readonly names: readonly string[];
  /** Whether any conversation can use another model than the gateway's own (so runs must ask). */
  readonly configured: boolean;
  /** What bindings match a message on, with this configuration's account names. */
  factsOf(message: Parameters<typeof bindingFactsOf>[1]): BindingFacts;
  /** The names users may pick with /model where `facts` hold (the file's, and the binding's). */
  namesFor(facts: BindingFacts): readonly string[];
  /** The conversation's model: its /model choice while that name is pickable here, else the default. */
  current(conversationId: string, facts: BindingFacts): Promise<CurrentModel>;
  /** Persists the choice; false (and nothing written) when `name` is not pickable where `facts` hold. */
  choose(conversationId: string, name: string, facts?: BindingFacts): Promise<boolean>;
  /** The model chain for a model name or a binding's model spec (null: the gateway's own chain). */
  chain(name: string | null): readonly ResolvedModel[];
  /** The chain of one run, from its conversation's choice when it starts (the runtime's `modelsFor`). */
  forRun(run: { conversationId: string; context: unknown }): Promise<readonly ModelEntry[]>;
}

/**
 * What the model registry resolves at start: the pickable names (the file's and the bindings'),
 * and each binding's `model` that is a spec rather than a name, keyed by the spec itself.
 */
export function registryModelsOf(file: FileConfig): Record<string, string> {
  const named: Record<string, string> = { ...pickableModels(file) };
  for (const binding of file.bindings) Object.assign(named, binding.models);
  for (const binding of file.bindings)
    if (binding.model !== undefined && named[binding.model] === undefined)
      named[binding.model] = binding.model;
  return named;
}

export function createModelChoices(options: {
  registry: ModelRegistry;
  file: FileConfig;
  store: RuntimeStore;
  clock: Clock;
}): ModelChoices {
  const { registry, file, store, clock } = options;
  const names = modelNamesOf(file);
  const namesFor = (facts: BindingFacts) => Object.keys(conversationSettings(file, facts).models);
  const current: ModelChoices["current"] = async (conversationId, facts) => {
    const settings = await store.loadConversationSettings(conversationId);
    const here = conversationSettings(file, facts);
    // The default is a name from `models` or a binding's spec; the registry resolved both at start.
    const fallback = here.model !== null && registry.named.has(here.model) ? here.model : null;
    return effectiveModel(settings.model, fallback, Object.keys(here.models));
  };
  const chain = (name: string | null): readonly ResolvedModel[] => {
    const chosen = name === null ? undefined : registry.named.get(name);
    return chosen ? chainWith(chosen, registry.chain) : registry.chain;
  };
  return {
    names,
    configured: registry.named.size > 0,
    namesFor,
    current,
    chain,
    factsOf: (message) => bindingFactsOf(file, message),
    async choose(conversationId, name, facts) {
      if (!(facts ? namesFor(facts) : names).includes(name)) return false;
      await store.saveConversationSettings(conversationId, { model: name }, clock.now());
      return true;
    },
    async forRun(run) {
      const context = readRunContext(run.context);
      // A child agent run as an entry of `agents` that names a model uses it; `self` its caller's.
      const childModel = context?.child?.profile ? file.agents[context.child.profile]?.model : undefined;
      if (childModel !== undefined) return chain(childModel);
      if (!context) {
        const settings = await store.loadConversationSettings(run.conversationId);
        return chain(effectiveModel(settings.model, null, names).name);
      }
      return chain(
        (await current(run.conversationId, bindingFactsOf(file, { ...context, user: context.principal.id })))
          .name,
      );
    },
  };
}
