import type { SQL } from "bun";
import type { SlackInstallationStore } from "../../../channels/slack/installations.ts";
import {
  type SlackInstallationDbRow,
  slackInstallationsSchemaSql,
  toSlackInstallation,
} from "../slack-installations.sql.ts";
import { POSTGRES_DIALECT } from "../tables.sql.ts";

/** Migration 22: Slack installations (../slack-installations.sql.ts). */
export const SLACK_INSTALLATIONS_SQL = slackInstallationsSchemaSql(POSTGRES_DIALECT);

export function createPostgresSlackInstallations(sql: SQL): SlackInstallationStore {
  return {
    async saveSlackInstallation(row, nowMs) {
      await sql`
        INSERT INTO slack_installations (installation_key, team_id, enterprise_id, app_id, account, sealed,
          token_expires_at_ms, installed_at_ms, updated_at_ms, uninstalled_at_ms, uninstall_reason)
        VALUES (${row.installationKey}, ${row.teamId}, ${row.enterpriseId}, ${row.appId}, ${row.account},
          ${row.sealed}, ${row.tokenExpiresAtMs}, ${nowMs}, ${nowMs}, NULL, NULL)
        ON CONFLICT (installation_key) DO UPDATE SET
          team_id = EXCLUDED.team_id, enterprise_id = EXCLUDED.enterprise_id, app_id = EXCLUDED.app_id,
          account = EXCLUDED.account, sealed = EXCLUDED.sealed, token_expires_at_ms = EXCLUDED.token_expires_at_ms,
          installed_at_ms = CASE WHEN slack_installations.uninstalled_at_ms IS NULL
            THEN slack_installations.installed_at_ms ELSE EXCLUDED.installed_at_ms END,
          updated_at_ms = EXCLUDED.updated_at_ms, uninstalled_at_ms = NULL, uninstall_reason = NULL`;
    },

    async slackInstallation(installationKey) {
      const [row] = await sql<SlackInstallationDbRow[]>`
        SELECT * FROM slack_installations WHERE installation_key = ${installationKey}`;
      return row === undefined ? null : toSlackInstallation(row);
    },

    async slackInstallations() {
      const rows = await sql<
        SlackInstallationDbRow[]
      >`SELECT * FROM slack_installations ORDER BY installation_key`;
      return rows.map(toSlackInstallation);
    },

    async uninstallSlackInstallation(installationKey, reason, nowMs) {
      const rows = await sql`
        UPDATE slack_installations SET sealed = NULL, token_expires_at_ms = NULL, uninstalled_at_ms = ${nowMs},
          uninstall_reason = ${reason}, updated_at_ms = ${nowMs}
        WHERE installation_key = ${installationKey} AND uninstalled_at_ms IS NULL
        RETURNING installation_key`;
      return rows.length > 0;
    },
  };
}
