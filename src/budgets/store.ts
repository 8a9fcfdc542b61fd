/**
 * The persistence of budgets: usage per run (kept by the database itself from each run's recorded
 * usage, in the transaction that records it) and operators' raised limits and resets. src/store
 * implements it on both engines and must pass test/store/budget-conformance.ts. The rules
 * (windows, verdicts) live in ./rules.ts.
 */
import type { UsageFilter } from "./config.ts";
import type { BudgetLimits, UsageTotals } from "./rules.ts";

/** An operator's change to one budget scope (`user:telegram:42`, `surface:telegram:dm`). */
export interface BudgetOverride {
  scope: string;
  /** Limits that replace the configured ones field by field; null: none raised. */
  limits: BudgetLimits | null;
  /** Usage before this instant does not count (`budgets reset`); null: never reset. */
  resetAtMs: number | null;
  updatedAtMs: number;
  updatedBy: string;
}

/** Usage of one user or one conversation since some instant. */
export interface UsageRow extends UsageTotals {
  /** `<channel>:<user id>`, or a conversation id. */
  key: string;
}

export interface BudgetStore {
  /** Usage matching `filter` of runs admitted at or after `sinceMs`. All zero when none. */
  usageSince(filter: UsageFilter, sinceMs: number): Promise<UsageTotals>;
  /**
   * Usage since `sinceMs` grouped by user or by conversation, most tokens first. A purged
   * conversation's runs still count for their user, under no conversation.
   */
  usageBy(group: "user" | "conversation", sinceMs: number, limit: number): Promise<UsageRow[]>;
  /** Usage of one conversation's runs admitted at or after `sinceMs`; all zero when none (or purged). */
  conversationUsageSince(conversationId: string, sinceMs: number): Promise<UsageTotals>;
  /** The operator's change to `scope`; null when none. */
  override(scope: string): Promise<BudgetOverride | null>;
  listOverrides(): Promise<BudgetOverride[]>;
  /**
   * Raises (merges `limits` over any earlier raise) and/or resets a scope, in one statement.
   * Returns the override as stored.
   */
  changeOverride(
    scope: string,
    change: { limits?: BudgetLimits; resetAtMs?: number },
    by: string,
    nowMs: number,
  ): Promise<BudgetOverride>;
  /** Drops the scope's override (back to the configuration); false when there was none. */
  clearOverride(scope: string): Promise<boolean>;
}
