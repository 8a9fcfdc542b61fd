import type { Clock } from "../util/clock.ts";
import { type BudgetScope, type BudgetsConfig, budgetScopes, webTokenScope } from "./config.ts";
import {
  type BudgetVerdict,
  budgetVerdict,
  budgetWindows,
  countingFrom,
  effectiveLimits,
  refusalText,
  statusLines,
} from "./rules.ts";
import type { BudgetStore } from "./store.ts";

/** Who a message is from and where, as budgets see it. */
export interface BudgetSubject {
  channel: string;
  surface: string;
  /** `<channel>:<user id>`. */
  principal: string;
}

/** One budget scope measured now: its limits in force, and the verdict. */
export interface ScopeReading {
  scope: BudgetScope;
  verdict: BudgetVerdict;
}

export interface BudgetGuard {
  /** Whether any budget is configured (without one, `check` always allows and reads nothing). */
  readonly enabled: boolean;
  /** The zone days and months are counted in. */
  readonly timezone: string;
  /** Every budget that applies to the subject, measured against recorded usage. */
  read(subject: BudgetSubject): Promise<ScopeReading[]>;
  /** Measures one scope (a configured or operator-named one) now. */
  readScope(scope: BudgetScope): Promise<ScopeReading>;
  /** Admission's check: allowed, or refused with the one reply the user gets. */
  check(
    subject: BudgetSubject,
  ): Promise<{ kind: "allowed" } | { kind: "refused"; text: string; scope: string }>;
  /** `/status` lines: usage and what remains of each budget that applies. */
  status(subject: BudgetSubject): Promise<string[]>;
}

/**
 * Applies SWITCHBOARD_CONFIG `budgets` (with operators' raised limits and resets) to recorded
 * usage. The decisions are ./rules.ts; this only reads the store and the clock.
 */
export function createBudgetGuard(options: {
  budgets: BudgetsConfig | undefined;
  /** SWITCHBOARD_TIMEZONE, used when `budgets.timezone` is not set. */
  defaultTimezone: string;
  store: BudgetStore;
  clock: Clock;
  /**
   * SWITCHBOARD_WEB_TOKEN, when set: every web chat message came with it (the web guard refuses
   * others), so `budgets.web.tokensPerDayPerToken` applies to them all. Null or absent: it does not apply.
   */
  webToken?: string | null;
}): BudgetGuard {
  const { budgets, store, clock } = options;
  const timezone = budgets?.timezone ?? options.defaultTimezone;
  const tokenScope = options.webToken ? webTokenScope(options.webToken) : null;

  const readScope = async (scope: BudgetScope): Promise<ScopeReading> => {
    const windows = budgetWindows(clock.now(), timezone);
    const override = await store.override(scope.scope);
    const limits = effectiveLimits(scope.configured, override?.limits ?? null);
    const from = countingFrom(windows, override?.resetAtMs ?? null);
    const needsDay = limits.tokensPerDay !== undefined || limits.costPerDayUsd !== undefined;
    const needsMonth = limits.tokensPerMonth !== undefined || limits.costPerMonthUsd !== undefined;
    const [day, month] = await Promise.all([
      needsDay ? store.usageSince(scope.filter, from.dayMs) : null,
      needsMonth ? store.usageSince(scope.filter, from.monthMs) : null,
    ]);
    const none = { tokens: 0, tokensUnknownRuns: 0, costUsd: 0, costUnknownRuns: 0, runs: 0 };
    return { scope, verdict: budgetVerdict(limits, { day: day ?? none, month: month ?? none }, windows) };
  };

  const read = async (subject: BudgetSubject) =>
    Promise.all(budgetScopes(budgets, subject, tokenScope).map((scope) => readScope(scope)));

  return {
    enabled:
      budgets !== undefined &&
      (budgets.perUser !== undefined ||
        Object.keys(budgets.perSurface ?? {}).length > 0 ||
        budgets.web !== undefined),
    timezone,
    read,
    readScope,
    async check(subject) {
      for (const { scope, verdict } of await read(subject)) {
        if (verdict.kind === "refused") {
          return { kind: "refused", text: refusalText(verdict, scope.label, timezone), scope: scope.scope };
        }
      }
      return { kind: "allowed" };
    },
    async status(subject) {
      const lines: string[] = [];
      for (const { scope, verdict } of await read(subject)) {
        lines.push(...statusLines(verdict.limits, scope.label, timezone));
      }
      return lines;
    },
  };
}
