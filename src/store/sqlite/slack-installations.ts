import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { SlackInstallationStore } from "../../../channels/slack/installations.ts";
import { slackInstallationStore } from "../slack-installation-store.ts";
import { slackInstallationsSchemaSql } from "../slack-installations.sql.ts";
import { SQLITE_DIALECT } from "../tables.sql.ts";

/** Migration 25: Slack installations (../slack-installations.sql.ts). */
export const SLACK_INSTALLATIONS_SQL = slackInstallationsSchemaSql(SQLITE_DIALECT);

export function createSqliteSlackInstallations(db: Database): SlackInstallationStore {
  return slackInstallationStore({
    param: (n) => `?${n}`,
    rows: async (sql, params) => db.query(sql).all(...(params as SQLQueryBindings[])),
  });
}
