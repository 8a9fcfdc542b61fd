import type { SQL } from "bun";
import type { SlackInstallationStore } from "../../../channels/slack/installations.ts";
import { slackInstallationStore } from "../slack-installation-store.ts";
import { slackInstallationsSchemaSql } from "../slack-installations.sql.ts";
import { POSTGRES_DIALECT } from "../tables.sql.ts";

/** Migration 22: Slack installations (../slack-installations.sql.ts). */
export const SLACK_INSTALLATIONS_SQL = slackInstallationsSchemaSql(POSTGRES_DIALECT);

export function createPostgresSlackInstallations(sql: SQL): SlackInstallationStore {
  return slackInstallationStore({
    param: (n) => `$${n}`,
    rows: async (text, params) => (await sql.unsafe(text, params)) as unknown[],
  });
}
