import type { ChannelName, SurfaceKind } from "../../channels/types.ts";
import type { ModelRegistry, ResolvedModel } from "../models/registry.ts";
import { readRunContext } from "../run-context.ts";
import type { ModelEntry } from "../runtime/step.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import type { Clock } from "../util/clock.ts";
import { defaultModelName, type FileConfig } from "./config/index.ts";

/** The model a conversation uses: a name from `models`, or null for the gateway's own model. */
export interface CurrentModel {
  name: string | null;
  /** True when the conversation picked it with /model (or an operator set it). */
  chosen: boolean;
}

/**
 * Which model a conversation's runs use: its /model choice while that name is still configured,
 * else the surface's `models.default`, else null (SWITCHBOARD_MODEL). Pure.
 */
export function effectiveModel(
  stored: string | undefined,
  surfaceDefault: string | null,
  names: readonly string[],
): CurrentModel {
  if (stored !== undefined && names.includes(stored)) return { name: stored, chosen: true };
  return {
    name: surfaceDefault !== null && names.includes(surfaceDefault) ? surfaceDefault : null,
    chosen: false,
  };
}

/** The chosen model first, then the configured fallbacks (SWITCHBOARD_FALLBACK_MODELS) it is not. */
export function chainWith(chosen: ResolvedModel, chain: readonly ResolvedModel[]): ResolvedModel[] {
  return [chosen, ...chain.slice(1).filter((m) => m.spec !== chosen.spec)];
}

export interface ModelChoices {
  /** The pickable names, in config order. */
  readonly names: readonly string[];
  current(
    conversationId: string,
    where: { channel: ChannelName; surface: SurfaceKind },
  ): Promise<CurrentModel>;
  /** Persists the choice; false (and nothing written) when `name` is not configured. */
  choose(conversationId: string, name: string): Promise<boolean>;
  /** The model chain for a model name (null: the gateway's own chain). */
  chain(name: string | null): readonly ResolvedModel[];
  /** The chain of one run, from its conversation's choice when it starts (the runtime's `modelsFor`). */
  forRun(run: { conversationId: string; context: unknown }): Promise<readonly ModelEntry[]>;
}

export function createModelChoices(options: {
  registry: ModelRegistry;
  file: FileConfig;
  store: RuntimeStore;
  clock: Clock;
}): ModelChoices {
  const { registry, file, store, clock } = options;
  const names = [...registry.named.keys()];
  const current: ModelChoices["current"] = async (conversationId, where) => {
    const settings = await store.loadConversationSettings(conversationId);
    return effectiveModel(settings.model, defaultModelName(file, where.channel, where.surface), names);
  };
  const chain = (name: string | null): readonly ResolvedModel[] => {
    const chosen = name === null ? undefined : registry.named.get(name);
    return chosen ? chainWith(chosen, registry.chain) : registry.chain;
  };
  return {
    names,
    current,
    chain,
    async choose(conversationId, name) {
      if (!names.includes(name)) return false;
      await store.saveConversationSettings(conversationId, { model: name }, clock.now());
      return true;
    },
    async forRun(run) {
      const context = readRunContext(run.context);
      const settings = await store.loadConversationSettings(run.conversationId);
      const fallback = context ? defaultModelName(file, context.channel, context.surface) : null;
      return chain(effectiveModel(settings.model, fallback, names).name);
    },
  };
}
