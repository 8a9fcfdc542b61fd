import { SQLITE_DIALECT, schedulesSchemaSql } from "../tables.sql.ts";

export { SCHEDULE_CHAT_KEYS_SQL } from "../tables.sql.ts";

/** Migration 3: schedules and their occurrences (../tables.sql.ts says what the columns mean). */
export const SCHEDULES_SCHEMA_SQL = schedulesSchemaSql(SQLITE_DIALECT);
