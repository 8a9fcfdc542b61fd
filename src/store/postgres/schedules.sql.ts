import { POSTGRES_DIALECT, schedulesSchemaSql } from "../tables.sql.ts";

export { SCHEDULE_CHAT_KEYS_SQL } from "../tables.sql.ts";

/**
 * Migration 4: schedules and their occurrences, SQLite's migration 3 with the same columns,
 * constraints and indexes (../tables.sql.ts says what the columns mean). Times in ms, versions
 * and fencing tokens are BIGINT; counts are INTEGER.
 */
export const SCHEDULES_SCHEMA_SQL = schedulesSchemaSql(POSTGRES_DIALECT);
