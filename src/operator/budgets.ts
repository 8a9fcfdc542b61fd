import type { BudgetsConfig } from "../budgets/config.ts";
import { scopeNamed, WEB_ALL_SCOPE } from "../budgets/config.ts";
import { createBudgetGuard } from "../budgets/guard.ts";
import { type BudgetLimits, budgetWindows, LIMIT_FIELDS } from "../budgets/rules.ts";
import type { BudgetStore } from "../budgets/store.ts";
import { SwitchboardError } from "../errors.ts";
import type { Clock } from "../util/clock.ts";
import type { BudgetScopeStatus, OperatorService } from "./types.ts";
import { checkActor } from "./validate.ts";

/** What budgets the operator service applies: SWITCHBOARD_CONFIG `budgets` and the zone they count in. */
export interface BudgetSettings {
  budgets: BudgetsConfig | undefined;
  /** SWITCHBOARD_TIMEZONE, for budgets without their own `timezone`. */
  timezone: string;
}

/** How many users and conversations `show` lists usage for. */
const USAGE_ROWS = 100;

/** The operator's view and controls of budgets: `switchboard budgets …` and /api/budgets. */
export function budgetOperations(options: {
  store: BudgetStore;
  clock: Clock;
  settings: () => BudgetSettings;
}): OperatorService["budgets"] {
  const { store, clock } = options;
  const guard = () => {
    const settings = options.settings();
    return {
      settings,
      guard: createBudgetGuard({
        budgets: settings.budgets,
        defaultTimezone: settings.timezone,
        store,
        clock,
      }),
    };
  };

  const scopeOf = (settings: BudgetSettings, scope: string) => {
    const named = scopeNamed(settings.budgets, String(scope));
    if (!named) {
      throw new SwitchboardError(
        "input_invalid",
        `"${scope}" is not a budget scope: use user:<channel>:<user id> (e.g. user:telegram:12345), surface:<channel>:<surface> (e.g. surface:telegram:dm, surface:*:*), web:all or web:token:<fingerprint>.`,
        { details: { field: "scope" } },
      );
    }
    return named;
  };

  const status = async (scope: string): Promise<BudgetScopeStatus> => {
    const { settings, guard: g } = guard();
    const named = scopeOf(settings, scope);
    const [reading, override] = await Promise.all([g.readScope(named), store.override(named.scope)]);
    return {
      scope: named.scope,
      timezone: g.timezone,
      configured: named.configured ?? null,
      override,
      limits: reading.verdict.limits,
      refused: reading.verdict.kind === "refused",
    };
  };

  return {
    async show() {
      const { settings, guard: g } = guard();
      const configured = [
        ...(settings.budgets?.perSurface
          ? Object.keys(settings.budgets.perSurface).map((k) => `surface:${k}`)
          : []),
        ...(settings.budgets?.web?.tokensPerDay === undefined ? [] : [WEB_ALL_SCOPE]),
      ];
      const overridden = (await store.listOverrides()).map((o) => o.scope);
      const scopes = [...new Set([...configured, ...overridden])].sort();
      const windows = budgetWindows(clock.now(), g.timezone);
      const [dayUsers, monthUsers, dayConversations, monthConversations] = await Promise.all([
        store.usageBy("user", windows.dayStartMs, USAGE_ROWS),
        store.usageBy("user", windows.monthStartMs, USAGE_ROWS),
        store.usageBy("conversation", windows.dayStartMs, USAGE_ROWS),
        store.usageBy("conversation", windows.monthStartMs, USAGE_ROWS),
      ]);
      const users = settings.budgets?.perUser
        ? [...new Set([...dayUsers, ...monthUsers].map((row) => `user:${row.key}`))]
        : [];
      return {
        timezone: g.timezone,
        periods: {
          day: { startMs: windows.dayStartMs, endMs: windows.dayEndMs },
          month: { startMs: windows.monthStartMs, endMs: windows.monthEndMs },
        },
        scopes: await Promise.all(scopes.map((scope) => status(scope))),
        usage: {
          user: { day: dayUsers, month: monthUsers },
          conversation: { day: dayConversations, month: monthConversations },
        },
        users: await Promise.all(users.sort().map((scope) => status(scope))),
      };
    },

    status,

    async conversation(conversationId) {
      const { guard: g } = guard();
      const windows = budgetWindows(clock.now(), g.timezone);
      const [day, month] = await Promise.all([
        store.conversationUsageSince(conversationId, windows.dayStartMs),
        store.conversationUsageSince(conversationId, windows.monthStartMs),
      ]);
      return {
        conversationId,
        timezone: g.timezone,
        day: { ...day, startMs: windows.dayStartMs, endMs: windows.dayEndMs },
        month: { ...month, startMs: windows.monthStartMs, endMs: windows.monthEndMs },
      };
    },

    async raise(scope, limits, actor) {
      const by = checkActor(actor);
      const named = scopeOf(options.settings(), scope);
      if (named.configured === undefined) {
        // Admission applies only configured budgets: a raise here would show but never count.
        throw new SwitchboardError(
          "input_invalid",
          named.filter.kind === "user"
            ? `No per-user budget is configured, so ${named.scope} has none to raise. Add budgets.perUser to SWITCHBOARD_CONFIG first.`
            : named.scope.startsWith("web:")
              ? `No budget is configured for ${named.scope}. Add budgets.web.${named.scope === "web:all" ? "tokensPerDay" : "tokensPerDayPerToken"} to SWITCHBOARD_CONFIG first.`
              : `No budget is configured for ${named.scope.slice("surface:".length)}. Add it to budgets.perSurface in SWITCHBOARD_CONFIG first.`,
          { details: { field: "scope" } },
        );
      }
      await store.changeOverride(named.scope, { limits: checkLimits(limits) }, by, clock.now());
      return status(named.scope);
    },

    async reset(scope, actor) {
      const by = checkActor(actor);
      const named = scopeOf(options.settings(), scope);
      await store.changeOverride(named.scope, { resetAtMs: clock.now() }, by, clock.now());
      return status(named.scope);
    },

    async clear(scope, actor) {
      checkActor(actor);
      const named = scopeOf(options.settings(), scope);
      if (!(await store.clearOverride(named.scope))) {
        throw new SwitchboardError(
          "not_found",
          `Budget scope ${named.scope} has no raised limit or reset; it already follows the configuration.`,
          { details: { scope: named.scope } },
        );
      }
      return status(named.scope);
    },
  };
}

/** The limits of a raise: known fields only, each a positive number (tokens whole), at least one. */
function checkLimits(input: unknown): BudgetLimits {
  const fail = (problem: string): never => {
    throw new SwitchboardError(
      "input_invalid",
      `${problem}. Give at least one of ${LIMIT_FIELDS.join(", ")} as a positive number (tokens whole), e.g. --tokens-per-day 500000.`,
      { details: { field: "limits" } },
    );
  };
  if (typeof input !== "object" || input === null || Array.isArray(input))
    return fail("The limits are missing");
  const limits: BudgetLimits = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!(LIMIT_FIELDS as readonly string[]).includes(key)) return fail(`"${key}" is not a budget limit`);
    const field = key as (typeof LIMIT_FIELDS)[number];
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
      return fail(`${field} must be a positive number, not ${JSON.stringify(value)}`);
    if (field.startsWith("tokens") && !Number.isInteger(value))
      return fail(`${field} must be a whole number`);
    limits[field] = value;
  }
  if (Object.keys(limits).length === 0) return fail("No limit was given");
  return limits;
}
