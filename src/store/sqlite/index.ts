import type { Database } from "bun:sqlite";
import type { SlackInstallationStore } from "../../../channels/slack/installations.ts";
import type { AccessStore } from "../../access/store.ts";
import type { BudgetStore } from "../../budgets/store.ts";
import type { OperatorQueries } from "../../operator/queries.ts";
import type { SearchStore } from "../../search/store.ts";
import { childAgentsSchemaSql } from "../child-sql.ts";
import { SQLITE_DIALECT } from "../tables.sql.ts";
import { ACCESS_SCHEMA_SQL, createSqliteAccessStore, PAIRING_ATTEMPT_KEYS_SQL } from "./access.ts";
import { BUDGET_ACCOUNT_PRINCIPALS_SQL, BUDGETS_SCHEMA_SQL, createSqliteBudgetStore } from "./budgets.ts";
import { type Migration, openDatabase } from "./database.ts";
import { STATE_COUNTS_SQL } from "./metrics.ts";
import { createSqliteOperatorQueries } from "./operator-queries.ts";
import {
  AMBIGUOUS_HOLDS_SQL,
  OUTBOX_MEDIA_SQL,
  OUTBOX_PRESENTATION_SQL,
  OUTBOX_SCHEMA_SQL,
  SqliteOutboxRepository,
} from "./outbox.ts";
import { SqliteRuntimeStore } from "./runtime-store.ts";
import { SCHEDULE_CHAT_KEYS_SQL, SCHEDULES_SCHEMA_SQL } from "./schedules.sql.ts";
import { createSqliteScheduleRepository } from "./schedules.ts";
import {
  ADMISSION_COLUMNS_SQL,
  APPROVALS_SCHEMA_SQL,
  CHANNEL_STATE_SQL,
  CONVERSATION_LOOKUP_SQL,
  EVENTS_BY_ROWID_SQL,
  HISTORY_SEARCH_SQL,
  PURGED_BY_SQL,
  RUNTIME_SCHEMA_SQL,
  SETTINGS_SCHEMA_SQL,
  STATE_SLOTS_SQL,
  SUMMARIES_SCHEMA_SQL,
  TOOL_OUTPUTS_SQL,
} from "./schema.ts";
import {
  backfillSearchIndex,
  createSqliteSearch,
  HISTORY_ACCOUNT_PRINCIPALS_SQL,
  INPUTS_AT_RUN_END_SQL,
  SEARCH_ROOMS_SQL,
} from "./search.ts";
import { createSqliteSlackInstallations, SLACK_INSTALLATIONS_SQL } from "./slack-installations.ts";

/** Every schema step switchboard's SQLite database has taken, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "runtime", sql: RUNTIME_SCHEMA_SQL },
  { version: 2, name: "outbox", sql: OUTBOX_SCHEMA_SQL },
  { version: 3, name: "schedules", sql: SCHEDULES_SCHEMA_SQL },
  { version: 4, name: "conversation-settings", sql: SETTINGS_SCHEMA_SQL },
  { version: 5, name: "conversation-summaries", sql: SUMMARIES_SCHEMA_SQL },
  { version: 6, name: "admission-columns", sql: ADMISSION_COLUMNS_SQL },
  { version: 7, name: "ambiguous-holds", sql: AMBIGUOUS_HOLDS_SQL },
  { version: 8, name: "events-by-rowid", sql: EVENTS_BY_ROWID_SQL },
  { version: 9, name: "schedule-chat-keys", sql: SCHEDULE_CHAT_KEYS_SQL },
  { version: 10, name: "tool-outputs", sql: TOOL_OUTPUTS_SQL },
  { version: 11, name: "state-slots", sql: STATE_SLOTS_SQL },
  { version: 12, name: "history-search", sql: HISTORY_SEARCH_SQL },
  { version: 13, name: "approvals", sql: `${APPROVALS_SCHEMA_SQL}\n${OUTBOX_PRESENTATION_SQL}` },
  { version: 14, name: "purged-by", sql: PURGED_BY_SQL },
  { version: 15, name: "access-pairing", sql: ACCESS_SCHEMA_SQL },
  { version: 16, name: "history-search-rooms", sql: SEARCH_ROOMS_SQL },
  { version: 17, name: "budgets", sql: BUDGETS_SCHEMA_SQL },
  { version: 18, name: "outbox-media", sql: OUTBOX_MEDIA_SQL },
  { version: 19, name: "conversation-lookup", sql: CONVERSATION_LOOKUP_SQL },
  { version: 20, name: "search-inputs-at-run-end", sql: INPUTS_AT_RUN_END_SQL },
  { version: 21, name: "state-counts", sql: STATE_COUNTS_SQL },
  { version: 22, name: "pairing-attempt-keys", sql: PAIRING_ATTEMPT_KEYS_SQL },
  { version: 23, name: "channel-state", sql: CHANNEL_STATE_SQL },
  { version: 24, name: "child-agents", sql: childAgentsSchemaSql(SQLITE_DIALECT) },
  { version: 25, name: "slack-installations", sql: SLACK_INSTALLATIONS_SQL },
  { version: 26, name: "budget-account-principals", sql: BUDGET_ACCOUNT_PRINCIPALS_SQL },
  { version: 27, name: "history-account-principals", sql: HISTORY_ACCOUNT_PRINCIPALS_SQL },
];

export interface SqliteStores {
  db: Database;
  runtime: SqliteRuntimeStore;
  outbox: SqliteOutboxRepository;
  schedules: ReturnType<typeof createSqliteScheduleRepository>;
  operator: OperatorQueries;
  search: SearchStore;
  access: AccessStore;
  budgets: BudgetStore;
  slackInstallations: SlackInstallationStore;
  close(): void;
}

/** Opens (creating and migrating as needed) switchboard's database and its repositories. */
export function openSqliteStores(
  filename: string,
  options: { busyTimeoutMs?: number; cacheBytes?: number } = {},
): SqliteStores {
  const db = openDatabase({ filename, migrations: MIGRATIONS, ...options });
  backfillSearchIndex(db);
  const schedules = createSqliteScheduleRepository(db);
  return {
    db,
    runtime: new SqliteRuntimeStore(db),
    outbox: new SqliteOutboxRepository(db),
    schedules,
    operator: createSqliteOperatorQueries({ db, schedules }),
    search: createSqliteSearch(db),
    access: createSqliteAccessStore(db),
    budgets: createSqliteBudgetStore(db),
    slackInstallations: createSqliteSlackInstallations(db),
    close: () => db.close(),
  };
}
