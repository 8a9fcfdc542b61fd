import type { SQL } from "bun";
import type { BudgetStore } from "../../budgets/store.ts";
import { type BudgetWrite, budgetStore } from "../budget-store.ts";
import { postgresPrincipalSql } from "../principal.sql.ts";
import { runAsync } from "../steps.ts";
import { budgetTablesSql, POSTGRES_DIALECT } from "../tables.sql.ts";

/** A run's principal before accounts (`<channel>:<user id>`) and since (`<channel>:<account>:<user id>` for a named account). */
const PRINCIPAL = "(context ->> 'channel') || ':' || (context -> 'principal' ->> 'id')";
const ACCOUNT_PRINCIPAL = postgresPrincipalSql("context");

/** The trigger function that records a run's usage under `principal` as the step recording it commits. */
const usageFunction = (
  principal: string,
) => `CREATE OR REPLACE FUNCTION switchboard_run_budget_usage() RETURNS trigger LANGUAGE plpgsql AS $fn$
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
          THEN ${principal} END,
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
$fn$;`;

/** Budget usage per run and operator overrides; SQLite's BUDGETS_SCHEMA_SQL, in PostgreSQL. */
export const BUDGETS_SCHEMA_SQL = `${budgetTablesSql(POSTGRES_DIALECT)}
CREATE FUNCTION switchboard_budget_tokens(usage JSONB) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN jsonb_typeof(usage -> 'inputTokens') = 'number' AND jsonb_typeof(usage -> 'outputTokens') = 'number'
    THEN ((usage ->> 'inputTokens')::numeric + (usage ->> 'outputTokens')::numeric)::bigint END
$fn$;
${usageFunction(PRINCIPAL)}
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
`;

/** SQLite's BUDGET_ACCOUNT_PRINCIPALS_SQL: a named account's users are principals of their own. */
export const BUDGET_ACCOUNT_PRINCIPALS_SQL = `
${usageFunction(ACCOUNT_PRINCIPAL)}
`;

export function createPostgresBudgetStore(sql: SQL): BudgetStore {
  return budgetStore({
    param: (n) => `$${n}`,
    lockRows: " FOR UPDATE",
    rows: async (text, params) => (await sql.unsafe(text, params)) as unknown[],
    async transact<R>(procedure: BudgetWrite<R>): Promise<R> {
      return (await sql.begin((tx) =>
        runAsync(procedure, { rows: async (text, params) => (await tx.unsafe(text, params)) as unknown[] }),
      )) as R;
    },
  });
}
