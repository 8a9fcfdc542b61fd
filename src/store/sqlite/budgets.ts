import type { Database } from "bun:sqlite";
import { mergeOverride } from "../../budgets/rules.ts";
import type { BudgetStore } from "../../budgets/store.ts";
import {
  filterParams,
  type OverrideRow,
  overrideFromRow,
  TOTALS_SQL,
  type TotalsRow,
  totalsFromRow,
  usageRowFrom,
} from "../budget-rows.ts";

/**
 * Budget usage per run, kept by a trigger from the runs' recorded usage (so it commits with the
 * step that records it), and operators' raised limits and resets. Usage survives a purge without
 * its conversation id: forgetting a conversation does not refund the user's budget.
 */
export const BUDGETS_SCHEMA_SQL = `
CREATE TABLE budget_usage (
  run_id TEXT PRIMARY KEY,
  principal TEXT,
  channel TEXT NOT NULL,
  surface TEXT NOT NULL,
  conversation_id TEXT,
  at_ms INTEGER NOT NULL,
  tokens INTEGER,
  cost_usd REAL
) WITHOUT ROWID;
CREATE INDEX budget_usage_principal ON budget_usage (principal, at_ms);
CREATE INDEX budget_usage_at ON budget_usage (at_ms);
CREATE INDEX budget_usage_conversation ON budget_usage (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE TRIGGER runs_budget_usage AFTER UPDATE OF usage ON runs
  WHEN json_valid(new.context) AND json_extract(new.context, '$.channel') IS NOT NULL BEGIN
  INSERT OR REPLACE INTO budget_usage (run_id, principal, channel, surface, conversation_id, at_ms, tokens, cost_usd)
  VALUES (
    new.id,
    CASE WHEN json_extract(new.context, '$.principal.id') IS NOT NULL
      THEN json_extract(new.context, '$.channel') || ':' || json_extract(new.context, '$.principal.id') END,
    json_extract(new.context, '$.channel'),
    COALESCE(json_extract(new.context, '$.surface'), '-'),
    new.conversation_id,
    new.created_at_ms,
    CASE WHEN json_type(new.usage, '$.inputTokens') IN ('integer', 'real')
      AND json_type(new.usage, '$.outputTokens') IN ('integer', 'real')
      THEN json_extract(new.usage, '$.inputTokens') + json_extract(new.usage, '$.outputTokens') END,
    json_extract(new.usage, '$.costUsd'));
END;
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
CREATE TABLE budget_overrides (
  scope TEXT PRIMARY KEY,
  limits TEXT,
  reset_at_ms INTEGER,
  updated_at_ms INTEGER NOT NULL,
  updated_by TEXT NOT NULL
) WITHOUT ROWID;
`;

export function createSqliteBudgetStore(db: Database): BudgetStore {
  const override = (scope: string) =>
    db.query<OverrideRow, [string]>("SELECT * FROM budget_overrides WHERE scope = ?").get(scope);
  return {
    async usageSince(filter, sinceMs) {
      const p = filterParams(filter);
      const row =
        p.principal !== null
          ? db
              .query<TotalsRow, [string, number]>(
                `SELECT ${TOTALS_SQL} FROM budget_usage WHERE principal = ? AND at_ms >= ?`,
              )
              .get(p.principal, sinceMs)
          : db
              .query<TotalsRow, [string, string, string, string, number]>(
                `SELECT ${TOTALS_SQL} FROM budget_usage
                 WHERE (? = '*' OR channel = ?) AND (? = '*' OR surface = ?) AND at_ms >= ?`,
              )
              .get(p.channel, p.channel, p.surface, p.surface, sinceMs);
      return totalsFromRow(row);
    },

    async conversationUsageSince(conversationId, sinceMs) {
      return totalsFromRow(
        db
          .query<TotalsRow, [string, number]>(
            `SELECT ${TOTALS_SQL} FROM budget_usage WHERE conversation_id = ? AND at_ms >= ?`,
          )
          .get(conversationId, sinceMs),
      );
    },

    async usageBy(group, sinceMs, limit) {
      const column = group === "user" ? "principal" : "conversation_id";
      return db
        .query<TotalsRow & { key: string }, [number, number]>(
          `SELECT ${column} AS key, ${TOTALS_SQL} FROM budget_usage
           WHERE ${column} IS NOT NULL AND at_ms >= ? GROUP BY ${column} ORDER BY tokens DESC, key LIMIT ?`,
        )
        .all(sinceMs, limit)
        .map(usageRowFrom);
    },

    async override(scope) {
      const row = override(scope);
      return row ? overrideFromRow(row) : null;
    },

    async listOverrides() {
      return db
        .query<OverrideRow, []>("SELECT * FROM budget_overrides ORDER BY scope")
        .all()
        .map(overrideFromRow);
    },

    async changeOverride(scope, change, by, nowMs) {
      return db
        .transaction(() => {
          const prior = override(scope);
          const { limits, resetAtMs } = mergeOverride(prior ? overrideFromRow(prior) : null, change);
          db.query(
            `INSERT OR REPLACE INTO budget_overrides (scope, limits, reset_at_ms, updated_at_ms, updated_by)
             VALUES (?, ?, ?, ?, ?)`,
          ).run(scope, limits === null ? null : JSON.stringify(limits), resetAtMs, nowMs, by);
          return overrideFromRow(override(scope)!);
        })
        .immediate();
    },

    async clearOverride(scope) {
      return db.query("DELETE FROM budget_overrides WHERE scope = ?").run(scope).changes > 0;
    },
  };
}
