/**
 * The models: those users may pick with /model (the file's `models`), the default per surface, and
 * the variables handed to the model registry.
 */
import { z } from "zod";
import type { ChannelName, SurfaceKind } from "../../../channels/types.ts";
import { modelSpecProblem } from "../../models/spec.ts";
import type { Env } from "../../util/env.ts";
import { SURFACE_KEY_HINT, SURFACE_KEYS } from "./surfaces.ts";

/** What a name in `models` looks like: what users type after /model. */
export const MODEL_NAME = /^[a-z0-9][a-z0-9_.-]{0,31}$/;

/** One model spec (`openrouter:<id>`, `openai-compatible:<id>`, `offline`), checked as the registry reads it. */
export const modelSpecSchema = z.string().superRefine((spec, ctx) => {
  const problem = modelSpecProblem(spec);
  if (problem)
    ctx.addIssue({
      code: "custom",
      message: `"${spec}" is not a model spec (${problem}); use "openrouter:<id>", "openai-compatible:<id>" or "offline"`,
    });
});

/**
 * `models`: the models users may pick with /model, by name (`"smart": "openrouter:…"`), and the
 * reserved key `default`: one name, or surface keys to names (`{"telegram:dm": "fast", "*:*": "smart"}`).
 */
export const modelsSchema = z
  .record(z.string(), z.union([z.string(), z.record(z.string(), z.string())]))
  .default({})
  .superRefine((models, ctx) => {
    const names = Object.keys(models).filter((key) => key !== "default");
    for (const name of names) {
      const spec = models[name];
      if (!MODEL_NAME.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${name}" is not a model name: use lowercase letters, digits, "-", "_" or "." (at most 32), e.g. "smart"`,
        });
      if (typeof spec !== "string") {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: 'must be a model spec such as "openrouter:anthropic/claude-sonnet-4"',
        });
        continue;
      }
      const problem = modelSpecProblem(spec);
      if (problem)
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${spec}" is not a model spec (${problem}); use "openrouter:<id>", "openai-compatible:<id>" or "offline"`,
        });
    }
    const fallback = models.default;
    if (fallback === undefined) return;
    const entries = typeof fallback === "string" ? [["*:*", fallback] as const] : Object.entries(fallback);
    for (const [surface, name] of entries) {
      const path = typeof fallback === "string" ? ["default"] : ["default", surface];
      if (!SURFACE_KEYS.includes(surface))
        ctx.addIssue({
          code: "custom",
          path,
          message: `"${surface}" is not a surface key: ${SURFACE_KEY_HINT}`,
        });
      if (!names.includes(name))
        ctx.addIssue({
          code: "custom",
          path,
          message: `"${name}" is not one of the models named here (${names.join(", ") || "none"})`,
        });
    }
  });

export type ModelsConfig = z.output<typeof modelsSchema>;

/** The pickable models of `models`, name → spec, without the `default` key. */
export function pickableModels(file: { models: ModelsConfig }): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, spec] of Object.entries(file.models)) {
    if (name !== "default" && typeof spec === "string") named[name] = spec;
  }
  return named;
}

/**
 * The model name `models.default` gives `channel:surface` (exact key, then `channel:*`, then
 * `*:surface`, then `*:*`), or null: the gateway's own model (SWITCHBOARD_MODEL).
 */
export function defaultModelName(
  file: { models: ModelsConfig },
  channel: ChannelName,
  surface: SurfaceKind,
): string | null {
  const fallback = file.models.default;
  if (fallback === undefined) return null;
  if (typeof fallback === "string") return fallback;
  return (
    fallback[`${channel}:${surface}`] ??
    fallback[`${channel}:*`] ??
    fallback[`*:${surface}`] ??
    fallback["*:*"] ??
    null
  );
}

/** The variables the model registry reads (SWITCHBOARD_MODEL, the providers' URLs and keys). */
export function modelEnvOf(env: Env): Record<string, string | undefined> {
  return {
    SWITCHBOARD_MODEL: env.SWITCHBOARD_MODEL,
    SWITCHBOARD_FALLBACK_MODELS: env.SWITCHBOARD_FALLBACK_MODELS,
    OPENROUTER_API_KEY: env.OPENROUTER_API_KEY,
    OPENROUTER_BASE_URL: env.OPENROUTER_BASE_URL,
    OPENAI_COMPATIBLE_BASE_URL: env.OPENAI_COMPATIBLE_BASE_URL,
    OPENAI_COMPATIBLE_API_KEY: env.OPENAI_COMPATIBLE_API_KEY,
  };
}
