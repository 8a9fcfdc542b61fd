import type { SQL } from "bun";
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

/** Budget usage per run and operator overrides; SQLite's BUDGETS_SCHEMA_SQL, in PostgreSQL. */
export const BUDGETS_SCHEMA_SQL = `
CREATE TABLE budget_usage (
  run_id TEXT PRIMARY KEY,
  principal TEXT,
  channel TEXT NOT NULL,
  surface TEXT NOT NULL,
  conversation_id TEXT,
  at_ms BIGINT NOT NULL,
  tokens BIGINT,
  cost_usd DOUBLE PRECISION
);
CREATE INDEX budget_usage_principal ON budget_usage (principal, at_ms);
CREATE INDEX budget_usage_at ON budget_usage (at_ms);
CREATE INDEX budget_usage_conversation ON budget_usage (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE FUNCTION switchboard_budget_tokens(usage JSONB) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN jsonb_typeof(usage -> 'inputTokens') = 'number' AND jsonb_typeof(usage -> 'outputTokens') = 'number'
    THEN ((usage ->> 'inputTokens')::numeric + (usage ->> 'outputTokens')::numeric)::bigint END
$fn$;
CREATE FUNCTION switchboard_run_budget_usage() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE context JSONB;
BEGIN
  BEGIN
    context := NEW.context::jsonb;
  EXCEPTION WHEN others THEN
    RETURN NEW;
  END;
  IF jsonb_typeof(context) = 'object' AND (context ->> 'channel') IS NOT NULL THEN
    INSERT INTO budget_usage (run_id, principal, channel, surface, conversation_id, at_ms, tokens, cost_usd)
      VALUES (
        NEW.id,
        CASE WHEN (context -> 'principal' ->> 'id') IS NOT NULL
          THEN (context ->> 'channel') || ':' || (context -> 'principal' ->> 'id') END,
        context ->> 'channel',
        COALESCE(context ->> 'surface', '-'),
        NEW.conversation_id,
        NEW.created_at_ms,
        switchboard_budget_tokens(NEW.usage::jsonb),
        (NEW.usage::jsonb ->> 'costUsd')::double precision)
      ON CONFLICT (run_id) DO UPDATE SET tokens = excluded.tokens, cost_usd = excluded.cost_usd;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_budget_usage AFTER UPDATE OF usage ON runs
  FOR EACH ROW EXECUTE FUNCTION switchboard_run_budget_usage();
CREATE FUNCTION switchboard_tombstone_budget_usage() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE budget_usage SET conversation_id = NULL WHERE conversation_id = NEW.conversation_id;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER tombstone_budget_usage AFTER INSERT ON conversation_tombstones
  FOR EACH ROW EXECUTE FUNCTION switchboard_tombstone_budget_usage();
INSERT INTO budget_usage (run_id, principal, channel, surface, conversation_id, at_ms, tokens, cost_usd)
  SELECT id,
    CASE WHEN (context::jsonb -> 'principal' ->> 'id') IS NOT NULL
      THEN (context::jsonb ->> 'channel') || ':' || (context::jsonb -> 'principal' ->> 'id') END,
    context::jsonb ->> 'channel',
    COALESCE(context::jsonb ->> 'surface', '-'),
    conversation_id,
    created_at_ms,
    switchboard_budget_tokens(usage::jsonb),
    (usage::jsonb ->> 'costUsd')::double precision
  FROM runs WHERE steps > 0 AND jsonb_typeof(context::jsonb) = 'object' AND (context::jsonb ->> 'channel') IS NOT NULL;
CREATE TABLE budget_overrides (
  scope TEXT PRIMARY KEY,
  limits TEXT,
  reset_at_ms BIGINT,
  updated_at_ms BIGINT NOT NULL,
  updated_by TEXT NOT NULL
);
`;

export function createPostgresBudgetStore(sql: SQL): BudgetStore {
  return {
    async usageSince(filter, sinceMs) {
      const p = filterParams(filter);
      const [row] =
        p.principal !== null
          ? await sql.unsafe<TotalsRow[]>(
              `SELECT ${TOTALS_SQL} FROM budget_usage WHERE principal = $1 AND at_ms >= $2`,
              [p.principal, sinceMs],
            )
          : await sql.unsafe<TotalsRow[]>(
              `SELECT ${TOTALS_SQL} FROM budget_usage
               WHERE ($1 = '*' OR channel = $1) AND ($2 = '*' OR surface = $2) AND at_ms >= $3`,
              [p.channel, p.surface, sinceMs],
            );
      return totalsFromRow(row);
    },

    async conversationUsageSince(conversationId, sinceMs) {
      const [row] = await sql.unsafe<TotalsRow[]>(
        `SELECT ${TOTALS_SQL} FROM budget_usage WHERE conversation_id = $1 AND at_ms >= $2`,
        [conversationId, sinceMs],
      );
      return totalsFromRow(row);
    },

    async usageBy(group, sinceMs, limit) {
      const column = group === "user" ? "principal" : "conversation_id";
      const rows = await sql.unsafe<Array<TotalsRow & { key: string }>>(
        `SELECT ${column} AS key, ${TOTALS_SQL} FROM budget_usage
         WHERE ${column} IS NOT NULL AND at_ms >= $1 GROUP BY ${column} ORDER BY tokens DESC, key LIMIT $2`,
        [sinceMs, limit],
      );
      return rows.map(usageRowFrom);
    },

    async override(scope) {
      const [row] = await sql<OverrideRow[]>`SELECT * FROM budget_overrides WHERE scope = ${scope}`;
      return row ? overrideFromRow(row) : null;
    },

    async listOverrides() {
      return (await sql<OverrideRow[]>`SELECT * FROM budget_overrides ORDER BY scope`).map(overrideFromRow);
    },

    async changeOverride(scope, change, by, nowMs) {
      return await sql.begin(async (tx) => {
        const [prior] = await tx<OverrideRow[]>`
          SELECT * FROM budget_overrides WHERE scope = ${scope} FOR UPDATE`;
        const { limits, resetAtMs } = mergeOverride(prior ? overrideFromRow(prior) : null, change);
        const [row] = await tx<OverrideRow[]>`
          INSERT INTO budget_overrides (scope, limits, reset_at_ms, updated_at_ms, updated_by)
          VALUES (${scope}, ${limits === null ? null : JSON.stringify(limits)}, ${resetAtMs}, ${nowMs}, ${by})
          ON CONFLICT (scope) DO UPDATE SET limits = excluded.limits, reset_at_ms = excluded.reset_at_ms,
            updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
          RETURNING *`;
        return overrideFromRow(row!);
      });
    },

    async clearOverride(scope) {
      const rows = await sql`DELETE FROM budget_overrides WHERE scope = ${scope} RETURNING scope`;
      return rows.length > 0;
    },
  };
}
