import { z } from "zod";
import { canonicalTimeZone } from "../../schedules/timezone.ts";
import { type BudgetLimits, LIMIT_FIELDS } from "./rules.ts";

const limitsSchema = z
  .object({
    tokensPerDay: z.number().int().min(1).optional(),
    tokensPerMonth: z.number().int().min(1).optional(),
    costPerDayUsd: z.number().positive().optional(),
    costPerMonthUsd: z.number().positive().optional(),
  })
  .strict()
  .refine((limits) => LIMIT_FIELDS.some((f) => limits[f] !== undefined), {
    message: `set at least one of ${LIMIT_FIELDS.join(", ")}`,
  });

/**
 * SWITCHBOARD_CONFIG `budgets`: `perUser` applies to each user on their own (all surfaces);
 * `perSurface` to everyone on the surfaces a key matches, together (`"*:*"`: the whole gateway).
 * Days and months are calendar ones in `timezone` (default SWITCHBOARD_TIMEZONE).
 */
export function budgetsSchema(surfaceKeys: readonly string[], surfaceKeyHint: string) {
  return z
    .object({
      timezone: z
        .string()
        .refine((zone) => canonicalTimeZone(zone) !== null, {
          message: 'is not an IANA time zone (e.g. "Europe/Berlin", "UTC")',
        })
        .optional(),
      perUser: limitsSchema.optional(),
      perSurface: z
        .record(
          z.string().refine((key) => surfaceKeys.includes(key), surfaceKeyHint),
          limitsSchema,
        )
        .optional(),
    })
    .strict();
}

export type BudgetsConfig = z.output<ReturnType<typeof budgetsSchema>>;

/** One budget that applies to a message: who it limits (for replies) and its configured limits. */
export interface BudgetScope {
  /** `user:<channel>:<user id>` or `surface:<surface key>`: the key of overrides and usage. */
  scope: string;
  /** How a reply names it: `your budget`, `the budget shared on telegram:dm`. */
  label: string;
  /** What the usage of this budget counts. */
  filter: UsageFilter;
  configured: BudgetLimits | undefined;
}

/** Whose usage a budget counts: one user's (any surface), or every run on matching surfaces. */
export type UsageFilter =
  | { kind: "user"; principal: string }
  | { kind: "surface"; channel: string; surface: string };

/**
 * The budgets that apply to a message from `principal` (`<channel>:<user id>`) on
 * `channel:surface`: the per-user one, then each `perSurface` key that matches.
 */
export function budgetScopes(
  budgets: BudgetsConfig | undefined,
  message: { channel: string; surface: string; principal: string },
): BudgetScope[] {
  if (!budgets) return [];
  const scopes: BudgetScope[] = [];
  if (budgets.perUser) {
    scopes.push({
      scope: `user:${message.principal}`,
      label: "your budget",
      filter: { kind: "user", principal: message.principal },
      configured: budgets.perUser,
    });
  }
  for (const [key, limits] of Object.entries(budgets.perSurface ?? {})) {
    const [channel, surface] = key.split(":") as [string, string];
    if (
      (channel === "*" || channel === message.channel) &&
      (surface === "*" || surface === message.surface)
    ) {
      scopes.push({
        scope: `surface:${key}`,
        label: `the budget shared on ${key}`,
        filter: { kind: "surface", channel, surface },
        configured: limits,
      });
    }
  }
  return scopes;
}

/** The usage filter an operator scope names (`user:telegram:42`, `surface:*:dm`); null when malformed. */
export function filterOfScope(scope: string): UsageFilter | null {
  const user = /^user:([a-z]+):(.+)$/.exec(scope);
  if (user) return { kind: "user", principal: `${user[1]}:${user[2]}` };
  const surface = /^surface:([a-z*]+):([a-z*]+)$/.exec(scope);
  if (surface) return { kind: "surface", channel: surface[1]!, surface: surface[2]! };
  return null;
}

/**
 * Why the configuration cannot start, or null: a budget that limits only cost while a model the
 * gateway may call reports no cost (only OpenRouter does) could never be checked.
 */
export function costOnlyBudgetProblem(
  budgets: BudgetsConfig | undefined,
  modelSpecs: readonly string[],
): string | null {
  if (!budgets) return null;
  const withoutCost = modelSpecs.filter((spec) => !spec.startsWith("openrouter:"));
  if (withoutCost.length === 0) return null;
  const costOnly = (limits: BudgetLimits) =>
    limits.tokensPerDay === undefined && limits.tokensPerMonth === undefined;
  const offending = [
    ...(budgets.perUser && costOnly(budgets.perUser) ? ["budgets.perUser"] : []),
    ...Object.entries(budgets.perSurface ?? {})
      .filter(([, limits]) => costOnly(limits))
      .map(([key]) => `budgets.perSurface["${key}"]`),
  ];
  if (offending.length === 0) return null;
  return (
    `${offending.join(", ")} limits only cost, but ${withoutCost.join(", ")} reports no cost (only openrouter: models do), ` +
    "so that budget could never be checked. Add tokensPerDay or tokensPerMonth to it, or use only openrouter: models."
  );
}

/**
 * The scope an operator names, with its configured limits (undefined: none configured) and how a
 * reply would name it; null when the name is malformed.
 */
export function scopeNamed(budgets: BudgetsConfig | undefined, scope: string): BudgetScope | null {
  const filter = filterOfScope(scope);
  if (!filter) return null;
  if (filter.kind === "user") {
    return { scope, label: "your budget", filter, configured: budgets?.perUser };
  }
  const key = `${filter.channel}:${filter.surface}`;
  return { scope, label: `the budget shared on ${key}`, filter, configured: budgets?.perSurface?.[key] };
}
