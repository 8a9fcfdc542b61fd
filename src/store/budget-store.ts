/**
 * The budget store (BudgetStore), written once: its SQL with the engine's placeholders, and the
 * one mutation (an override changed over the one before it) as a procedure of steps (see
 * steps.ts) that each engine runs in one write transaction.
 */
import { mergeOverride } from "../budgets/rules.ts";
import type { BudgetStore } from "../budgets/store.ts";
import {
  filterParams,
  type OverrideRow,
  overrideFromRow,
  TOTALS_SQL,
  type TotalsRow,
  totalsFromRow,
  usageRowFrom,
} from "./budget-rows.ts";
import { type StepCall, stepsOf } from "./steps.ts";

/** The one step of the override's procedure: a statement, and its rows. */
export interface BudgetSteps {
  rows(sql: string, params: unknown[]): unknown[];
}

export type BudgetWrite<R> = Generator<StepCall<BudgetSteps>, R, unknown>;

/** How an engine runs the budget store's SQL. */
export interface BudgetEngine {
  /** Placeholder `n` (from 1). */
  param(n: number): string;
  /** What locks the rows a read selects until its transaction ends (PostgreSQL: ` FOR UPDATE`). */
  lockRows: string;
  /** The rows of one statement, on its own. */
  rows(sql: string, params: unknown[]): Promise<unknown[]>;
  /** Runs `procedure` in one write transaction. */
  transact<R>(procedure: BudgetWrite<R>): Promise<R>;
}

const step = stepsOf<BudgetSteps>();

export function budgetStore(engine: BudgetEngine): BudgetStore {
  const p = engine.param;
  const rows = async <T>(sql: string, params: unknown[]): Promise<T[]> =>
    (await engine.rows(sql, params)) as T[];
  const BY_PRINCIPAL = `SELECT ${TOTALS_SQL} FROM budget_usage WHERE principal = ${p(1)} AND at_ms >= ${p(2)}`;
  const BY_SURFACE = `SELECT ${TOTALS_SQL} FROM budget_usage
    WHERE (${p(1)} = '*' OR channel = ${p(1)}) AND (${p(2)} = '*' OR surface = ${p(2)}) AND at_ms >= ${p(3)}`;
  const BY_CONVERSATION = `SELECT ${TOTALS_SQL} FROM budget_usage WHERE conversation_id = ${p(1)} AND at_ms >= ${p(2)}`;
  const OVERRIDE = `SELECT * FROM budget_overrides WHERE scope = ${p(1)}`;
  const PUT_OVERRIDE = `
    INSERT INTO budget_overrides (scope, limits, reset_at_ms, updated_at_ms, updated_by)
    VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)})
    ON CONFLICT (scope) DO UPDATE SET limits = excluded.limits, reset_at_ms = excluded.reset_at_ms,
      updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
    RETURNING *`;

  function* changeOverride(
    scope: string,
    change: Parameters<BudgetStore["changeOverride"]>[1],
    by: string,
    nowMs: number,
  ): BudgetWrite<ReturnType<typeof overrideFromRow>> {
    const [prior] = (yield step("rows", `${OVERRIDE}${engine.lockRows}`, [scope])) as OverrideRow[];
    const { limits, resetAtMs } = mergeOverride(prior ? overrideFromRow(prior) : null, change);
    const [row] = (yield step("rows", PUT_OVERRIDE, [
      scope,
      limits === null ? null : JSON.stringify(limits),
      resetAtMs,
      nowMs,
      by,
    ])) as OverrideRow[];
    return overrideFromRow(row!);
  }

  return {
    async usageSince(filter, sinceMs) {
      const f = filterParams(filter);
      const [row] =
        f.principal !== null
          ? await rows<TotalsRow>(BY_PRINCIPAL, [f.principal, sinceMs])
          : await rows<TotalsRow>(BY_SURFACE, [f.channel, f.surface, sinceMs]);
      return totalsFromRow(row);
    },

    async conversationUsageSince(conversationId, sinceMs) {
      const [row] = await rows<TotalsRow>(BY_CONVERSATION, [conversationId, sinceMs]);
      return totalsFromRow(row);
    },

    async usageBy(group, sinceMs, limit) {
      const column = group === "user" ? "principal" : "conversation_id";
      const found = await rows<TotalsRow & { key: string }>(
        `SELECT ${column} AS key, ${TOTALS_SQL} FROM budget_usage
         WHERE ${column} IS NOT NULL AND at_ms >= ${p(1)} GROUP BY ${column} ORDER BY tokens DESC, key LIMIT ${p(2)}`,
        [sinceMs, limit],
      );
      return found.map(usageRowFrom);
    },

    async override(scope) {
      const [row] = await rows<OverrideRow>(OVERRIDE, [scope]);
      return row ? overrideFromRow(row) : null;
    },

    async listOverrides() {
      return (await rows<OverrideRow>("SELECT * FROM budget_overrides ORDER BY scope", [])).map(
        overrideFromRow,
      );
    },

    changeOverride: (scope, change, by, nowMs) => engine.transact(changeOverride(scope, change, by, nowMs)),

    async clearOverride(scope) {
      return (
        (await rows(`DELETE FROM budget_overrides WHERE scope = ${p(1)} RETURNING scope`, [scope])).length > 0
      );
    },
  };
}
