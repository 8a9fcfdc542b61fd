import type { UsageFilter } from "../budgets/config.ts";
import type { UsageTotals } from "../budgets/rules.ts";
import type { BudgetOverride, UsageRow } from "../budgets/store.ts";

/** The tables of budget usage and operator overrides (same on both engines). */
export interface OverrideRow {
  scope: string;
  limits: string | null;
  reset_at_ms: number | string | null;
  updated_at_ms: number | string;
  updated_by: string;
}

export function overrideFromRow(row: OverrideRow): BudgetOverride {
  return {
    scope: row.scope,
    limits: row.limits === null ? null : JSON.parse(row.limits),
    resetAtMs: row.reset_at_ms === null ? null : Number(row.reset_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
    updatedBy: row.updated_by,
  };
}

export interface TotalsRow {
  tokens: number | string | null;
  tokens_unknown: number | string | null;
  cost_usd: number | string | null;
  cost_unknown: number | string | null;
  runs: number | string;
}

/** The aggregate columns both engines select: unknown counts as unknown, never as zero. */
export const TOTALS_SQL = `COALESCE(SUM(tokens), 0) AS tokens,
  SUM(CASE WHEN tokens IS NULL THEN 1 ELSE 0 END) AS tokens_unknown,
  COALESCE(SUM(cost_usd), 0) AS cost_usd,
  SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END) AS cost_unknown,
  COUNT(*) AS runs`;

export function totalsFromRow(row: TotalsRow | null | undefined): UsageTotals {
  return {
    tokens: Number(row?.tokens ?? 0),
    tokensUnknownRuns: Number(row?.tokens_unknown ?? 0),
    costUsd: Number(row?.cost_usd ?? 0),
    costUnknownRuns: Number(row?.cost_unknown ?? 0),
    runs: Number(row?.runs ?? 0),
  };
}

export function usageRowFrom(row: TotalsRow & { key: string }): UsageRow {
  return { key: row.key, ...totalsFromRow(row) };
}

/** A filter's WHERE parameters: principal, or channel and surface (`*`: any). */
export function filterParams(filter: UsageFilter): {
  principal: string | null;
  channel: string;
  surface: string;
} {
  return filter.kind === "user"
    ? { principal: filter.principal, channel: "*", surface: "*" }
    : { principal: null, channel: filter.channel, surface: filter.surface };
}
