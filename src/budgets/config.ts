import { createHash } from "node:crypto";
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
 * `budgets.web`: the web chat's users together. Each browser session is a user of its own, so
 * `perUser` alone is escaped by clearing the browser's storage; these bound the chat as a whole.
 */
const webBudgetSchema = z
  .object({
    /** Tokens a day across every web chat session. */
    tokensPerDay: z.number().int().min(1).optional(),
    /** Tokens a day for everyone who holds the one SWITCHBOARD_WEB_TOKEN; applies only while it is set. */
    tokensPerDayPerToken: z.number().int().min(1).optional(),
  })
  .strict()
  .refine((web) => web.tokensPerDay !== undefined || web.tokensPerDayPerToken !== undefined, {
    message: "set tokensPerDay and/or tokensPerDayPerToken",
  });

/**
 * SWITCHBOARD_CONFIG `budgets`: `perUser` applies to each user on their own (all surfaces);
 * `perSurface` to everyone on the surfaces a key matches, together (`"*:*"`: the whole gateway);
 * `web` to the web chat's sessions together (see webBudgetSchema).
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
      web: webBudgetSchema.optional(),
    })
    .strict();
}

export type BudgetsConfig = z.output<ReturnType<typeof budgetsSchema>>;

/** One budget that applies to a message: who it limits (for replies) and its configured limits. */
export interface BudgetScope {
  /**
   * `user:<channel>:<user id>`, `surface:<surface key>`, `web:all` or `web:token:<fingerprint>`:
   * the key of overrides and usage.
   */
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

/** The scope of the web chat's budget shared by all its sessions. */
export const WEB_ALL_SCOPE = "web:all";

/**
 * The scope of the budget shared by the holders of one SWITCHBOARD_WEB_TOKEN: named by a
 * fingerprint (a truncated sha256, never the token), so a new token is a new scope.
 */
export function webTokenScope(token: string): string {
  return `web:token:${createHash("sha256").update(token).digest("hex").slice(0, 12)}`;
}

/** Every web chat run, whoever's session: web principals are opaque, so only the channel counts. */
const WEB_USAGE: UsageFilter = { kind: "surface", channel: "web", surface: "*" };

/**
 * The budgets that apply to a message from `principal` (`<channel>:<user id>`) on
 * `channel:surface`: the per-user one, then each `perSurface` key that matches, then for the web
 * chat `budgets.web` (the per-token one only when `tokenScope`, webTokenScope's, names the token in force).
 */
export function budgetScopes(
  budgets: BudgetsConfig | undefined,
  message: { channel: string; surface: string; principal: string },
  tokenScope: string | null = null,
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
  if (message.channel === "web" && budgets.web) {
    const { tokensPerDay, tokensPerDayPerToken } = budgets.web;
    if (tokensPerDay !== undefined) scopes.push(webScope(WEB_ALL_SCOPE, tokensPerDay));
    if (tokensPerDayPerToken !== undefined && tokenScope !== null)
      scopes.push(webScope(tokenScope, tokensPerDayPerToken));
  }
  return scopes;
}

function webScope(scope: string, tokensPerDay: number | undefined): BudgetScope {
  return {
    scope,
    label:
      scope === WEB_ALL_SCOPE
        ? "the budget all web chat users share"
        : "the budget everyone with this web chat token shares",
    filter: WEB_USAGE,
    configured: tokensPerDay === undefined ? undefined : { tokensPerDay },
  };
}

/**
 * The usage filter an operator scope names (`user:telegram:42`, `surface:*:dm`, `web:all`,
 * `web:token:<fingerprint>`); null when malformed.
 */
export function filterOfScope(scope: string): UsageFilter | null {
  if (scope === WEB_ALL_SCOPE || /^web:token:[0-9a-f]{12}$/.test(scope)) return WEB_USAGE;
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
  if (scope.startsWith("web:")) {
    const web = budgets?.web;
    return webScope(scope, scope === WEB_ALL_SCOPE ? web?.tokensPerDay : web?.tokensPerDayPerToken);
  }
  if (filter.kind === "user") {
    return { scope, label: "your budget", filter, configured: budgets?.perUser };
  }
  const key = `${filter.channel}:${filter.surface}`;
  return { scope, label: `the budget shared on ${key}`, filter, configured: budgets?.perSurface?.[key] };
}
