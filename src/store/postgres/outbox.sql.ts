import { outboxSchemaSql, POSTGRES_DIALECT } from "../tables.sql.ts";

/**
 * Migration 5: the outbox table, SQLite's with BIGINT millisecond times and a BOOLEAN `final`
 * (../tables.sql.ts).
 */
export const OUTBOX_SCHEMA_SQL = outboxSchemaSql(POSTGRES_DIALECT);
