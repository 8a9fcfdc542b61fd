import { formatInZone, toZonedParts, wallTimeToInstantMs } from "../../schedules/timezone.ts";

/** The limits of one budget; each is optional, and at least one is set. */
export interface BudgetLimits {
  tokensPerDay?: number;
  tokensPerMonth?: number;
  costPerDayUsd?: number;
  costPerMonthUsd?: number;
}

export const LIMIT_FIELDS = ["tokensPerDay", "tokensPerMonth", "costPerDayUsd", "costPerMonthUsd"] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];

/** What one budget window has used. `*UnknownRuns`: runs whose provider reported no count. */
export interface UsageTotals {
  tokens: number;
  /** Runs in the window whose token count is unavailable (not counted as zero: see the verdict). */
  tokensUnknownRuns: number;
  costUsd: number;
  costUnknownRuns: number;
  runs: number;
}

export const NO_USAGE: UsageTotals = {
  tokens: 0,
  tokensUnknownRuns: 0,
  costUsd: 0,
  costUnknownRuns: 0,
  runs: 0,
};

/** The current day and month in a time zone, as half-open [start, end) instants. */
export interface BudgetWindows {
  dayStartMs: number;
  dayEndMs: number;
  monthStartMs: number;
  monthEndMs: number;
}

/**
 * The calendar day and month that contain `nowMs` in `timezone` (local midnights, so a day
 * across a DST change is 23 or 25 hours long).
 */
export function budgetWindows(nowMs: number, timezone: string): BudgetWindows {
  const p = toZonedParts(nowMs, timezone);
  const midnight = (year: number, month: number, day: number) =>
    wallTimeToInstantMs({ year, month, day, hour: 0, minute: 0 }, timezone);
  // Date.UTC normalises day 32 or month 13 into the next month or year.
  const next = new Date(Date.UTC(p.year, p.month - 1, p.day + 1));
  const nextMonth = new Date(Date.UTC(p.year, p.month, 1));
  return {
    dayStartMs: midnight(p.year, p.month, p.day),
    dayEndMs: midnight(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate()),
    monthStartMs: midnight(p.year, p.month, 1),
    monthEndMs: midnight(nextMonth.getUTCFullYear(), nextMonth.getUTCMonth() + 1, 1),
  };
}

/**
 * Where usage counts from in each window: the window's start, or a later operator reset
 * (`switchboard budgets reset`) within it.
 */
export function countingFrom(
  windows: BudgetWindows,
  resetAtMs: number | null,
): { dayMs: number; monthMs: number } {
  const reset = resetAtMs ?? Number.NEGATIVE_INFINITY;
  return { dayMs: Math.max(windows.dayStartMs, reset), monthMs: Math.max(windows.monthStartMs, reset) };
}

/** The limits in force: the configured ones with an operator's raised values over them. */
export function effectiveLimits(
  configured: BudgetLimits | undefined,
  raised: BudgetLimits | null,
): BudgetLimits {
  return { ...(configured ?? {}), ...(raised ?? {}) };
}

/** One limit measured against its window. `used` null: unavailable (a run reported no count). */
export interface LimitStatus {
  field: LimitField;
  limit: number;
  used: number;
  /** Some run in the window has no count for this measure: `used` is a lower bound. */
  incomplete: boolean;
  /** What is left (0 when over); null when unavailable usage makes it unknowable. */
  remaining: number | null;
  resetsAtMs: number;
}

export type BudgetVerdict =
  | { kind: "allowed"; limits: LimitStatus[] }
  /**
   * `exceeded` is the limit that refuses: its usage reached it, or (cost only) its usage cannot be
   * measured and no token limit stands in for it.
   */
  | { kind: "refused"; exceeded: LimitStatus; reason: "reached" | "cost_unavailable"; limits: LimitStatus[] };

const isCost = (field: LimitField) => field === "costPerDayUsd" || field === "costPerMonthUsd";
const isDay = (field: LimitField) => field === "tokensPerDay" || field === "costPerDayUsd";

/**
 * Each configured limit against the usage of its window, then the verdict. A limit reached
 * refuses. Unavailable cost never counts as zero: a cost limit whose window holds a run without a
 * cost is unknowable, which refuses only when no token limit applies (token limits still do).
 */
export function budgetVerdict(
  limits: BudgetLimits,
  usage: { day: UsageTotals; month: UsageTotals },
  windows: BudgetWindows,
): BudgetVerdict {
  const statuses: LimitStatus[] = [];
  for (const field of LIMIT_FIELDS) {
    const limit = limits[field];
    if (limit === undefined) continue;
    const totals = isDay(field) ? usage.day : usage.month;
    const used = isCost(field) ? totals.costUsd : totals.tokens;
    const incomplete = (isCost(field) ? totals.costUnknownRuns : totals.tokensUnknownRuns) > 0;
    statuses.push({
      field,
      limit,
      used,
      incomplete,
      remaining: incomplete ? null : Math.max(0, limit - used),
      resetsAtMs: isDay(field) ? windows.dayEndMs : windows.monthEndMs,
    });
  }
  // The limit that frees up last is the one to name: waiting for an earlier reset would not help.
  const reached = statuses.filter((s) => s.used >= s.limit).sort((a, b) => b.resetsAtMs - a.resetsAtMs);
  if (reached[0]) return { kind: "refused", exceeded: reached[0], reason: "reached", limits: statuses };
  const hasTokenLimit = statuses.some((s) => !isCost(s.field));
  const unknowable = statuses.find((s) => isCost(s.field) && s.incomplete);
  if (unknowable && !hasTokenLimit) {
    return { kind: "refused", exceeded: unknowable, reason: "cost_unavailable", limits: statuses };
  }
  return { kind: "allowed", limits: statuses };
}

const LABELS: Record<LimitField, string> = {
  tokensPerDay: "tokens a day",
  tokensPerMonth: "tokens a month",
  costPerDayUsd: "a day",
  costPerMonthUsd: "a month",
};

function amount(field: LimitField, value: number): string {
  return isCost(field) ? `$${value.toFixed(2)}` : Math.round(value).toLocaleString("en");
}

/** `200,000 tokens a day` or `$5.00 a month`. */
export function describeLimit(field: LimitField, limit: number): string {
  return `${amount(field, limit)} ${LABELS[field]}`;
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The one reply a refused input gets: which limit, and when it resets. `scope`: `your budget`. */
export function refusalText(
  verdict: Extract<BudgetVerdict, { kind: "refused" }>,
  scope: string,
  timezone: string,
): string {
  const { exceeded } = verdict;
  const when = `${formatInZone(exceeded.resetsAtMs, timezone)} (${timezone})`;
  if (verdict.reason === "cost_unavailable") {
    return `I can't answer this: ${scope} of ${describeLimit(exceeded.field, exceeded.limit)} can't be checked, because the model did not report what some answers cost. It resets ${when}; an operator can reset it sooner. I did not read this message; please send it again then.`;
  }
  return `I can't answer this: ${scope} of ${describeLimit(exceeded.field, exceeded.limit)} is used up. It resets ${when}. I did not read this message; please send it again then.`;
}

/** `/status` lines: each limit with what is used and what remains. */
export function statusLines(statuses: readonly LimitStatus[], scope: string, timezone: string): string[] {
  return statuses.map((s) => {
    const used = `${s.incomplete ? "at least " : ""}${amount(s.field, s.used)}`;
    const left =
      s.remaining === null
        ? `remaining unknown (a model reported no ${isCost(s.field) ? "cost" : "token count"})`
        : `${amount(s.field, s.remaining)} left`;
    return `${capitalise(scope)}: ${used} of ${describeLimit(s.field, s.limit)} used, ${left}; resets ${formatInZone(s.resetsAtMs, timezone)}`;
  });
}

/** An operator's raise merges over the earlier raise field by field; a reset replaces the earlier one. */
export function mergeOverride(
  prior: { limits: BudgetLimits | null; resetAtMs: number | null } | null,
  change: { limits?: BudgetLimits; resetAtMs?: number },
): { limits: BudgetLimits | null; resetAtMs: number | null } {
  const limits = change.limits ? { ...(prior?.limits ?? {}), ...change.limits } : (prior?.limits ?? null);
  return { limits, resetAtMs: change.resetAtMs ?? prior?.resetAtMs ?? null };
}
