import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { BudgetStore } from "../../budgets/store.ts";
import { budgetStore } from "../budget-store.ts";
import { sqlitePrincipalSql } from "../principal.sql.ts";
import { runSync } from "../steps.ts";
import { budgetTablesSql, SQLITE_DIALECT } from "../tables.sql.ts";

/** A run's principal before accounts (`<channel>:<user id>`) and since (`<channel>:<account>:<user id>` for a named account). */
const PRINCIPAL =
  "json_extract(new.context, '$.channel') || ':' || json_extract(new.context, '$.principal.id')";
const ACCOUNT_PRINCIPAL = sqlitePrincipalSql("new.context");

/** The trigger that records a run's usage under `principal` as the step recording it commits. */
const usageTrigger = (principal: string) => `CREATE TRIGGER runs_budget_usage AFTER UPDATE OF usage ON runs
  WHEN json_valid(new.context) AND json_extract(new.context, '$.channel') IS NOT NULL BEGIN
  INSERT OR REPLACE INTO budget_usage (run_id, principal, channel, surface, conversation_id, at_ms, tokens, cost_usd)
  VALUES (
    new.id,
    CASE WHEN json_extract(new.context, '$.principal.id') IS NOT NULL
      THEN ${principal} END,
    json_extract(new.context, '$.channel'),
    COALESCE(json_extract(new.context, '$.surface'), '-'),
    new.conversation_id,
    new.created_at_ms,
    CASE WHEN json_type(new.usage, '$.inputTokens') IN ('integer', 'real')
      AND json_type(new.usage, '$.outputTokens') IN ('integer', 'real')
      THEN json_extract(new.usage, '$.inputTokens') + json_extract(new.usage, '$.outputTokens') END,
    json_extract(new.usage, '$.costUsd'));
END;`;

/**
 * Budget usage per run, kept by a trigger from the runs' recorded usage (so it commits with the
 * step that records it), and operators' raised limits and resets. Usage survives a purge without
 * its conversation id: forgetting a conversation does not refund the user's budget.
 */
export const BUDGETS_SCHEMA_SQL = `${budgetTablesSql(SQLITE_DIALECT)}
${usageTrigger(PRINCIPAL)}
CREATE TRIGGER tombstone_budget_usage AFTER INSERT ON conversation_tombstones BEGIN
  UPDATE budget_usage SET conversation_id = NULL WHERE conversation_id = new.conversation_id;
END;
INSERT INTO budget_usage (run_id, principal, channel, surface, conversation_id, at_ms, tokens, cost_usd)
  SELECT id,
    CASE WHEN json_extract(context, '$.principal.id') IS NOT NULL
      THEN json_extract(context, '$.channel') || ':' || json_extract(context, '$.principal.id') END,
    json_extract(context, '$.channel'),
    COALESCE(json_extract(context, '$.surface'), '-'),
    conversation_id,
    created_at_ms,
    CASE WHEN json_type(usage, '$.inputTokens') IN ('integer', 'real')
      AND json_type(usage, '$.outputTokens') IN ('integer', 'real')
      THEN json_extract(usage, '$.inputTokens') + json_extract(usage, '$.outputTokens') END,
    json_extract(usage, '$.costUsd')
  FROM runs WHERE steps > 0 AND json_valid(context) AND json_extract(context, '$.channel') IS NOT NULL;
`;

/**
 * A named account's users are principals of their own (`<channel>:<account>:<user id>`, from the
 * run context's `accountName`); the `default` account's stay `<channel>:<user id>`, so usage
 * recorded before accounts existed keeps counting for them. Rows already recorded are unchanged.
 */
export const BUDGET_ACCOUNT_PRINCIPALS_SQL = `
DROP TRIGGER runs_budget_usage;
${usageTrigger(ACCOUNT_PRINCIPAL)}
`;

export function createSqliteBudgetStore(db: Database): BudgetStore {
  const rows = (sql: string, params: unknown[]) => db.query(sql).all(...(params as SQLQueryBindings[]));
  return budgetStore({
    param: (n) => `?${n}`,
    lockRows: "",
    rows: (sql, params) => {
      try {
        return Promise.resolve(rows(sql, params));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    transact: async (procedure) => db.transaction(() => runSync(procedure, { rows })).immediate(),
  });
}
