import type { Database } from "bun:sqlite";
import type { SlackInstallationStore } from "../../../channels/slack/installations.ts";
import {
  type SlackInstallationDbRow,
  slackInstallationsSchemaSql,
  toSlackInstallation,
} from "../slack-installations.sql.ts";
import { SQLITE_DIALECT } from "../tables.sql.ts";

/** Migration 25: Slack installations (../slack-installations.sql.ts). */
export const SLACK_INSTALLATIONS_SQL = slackInstallationsSchemaSql(SQLITE_DIALECT);

export function createSqliteSlackInstallations(db: Database): SlackInstallationStore {
  return {
    async saveSlackInstallation(row, nowMs) {
      db.query(
        `INSERT INTO slack_installations (installation_key, team_id, enterprise_id, app_id, account, sealed,
           token_expires_at_ms, installed_at_ms, updated_at_ms, uninstalled_at_ms, uninstall_reason)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
         ON CONFLICT (installation_key) DO UPDATE SET
           team_id = excluded.team_id, enterprise_id = excluded.enterprise_id, app_id = excluded.app_id,
           account = excluded.account, sealed = excluded.sealed, token_expires_at_ms = excluded.token_expires_at_ms,
           installed_at_ms = CASE WHEN slack_installations.uninstalled_at_ms IS NULL
             THEN slack_installations.installed_at_ms ELSE excluded.installed_at_ms END,
           updated_at_ms = excluded.updated_at_ms, uninstalled_at_ms = NULL, uninstall_reason = NULL`,
      ).run(
        row.installationKey,
        row.teamId,
        row.enterpriseId,
        row.appId,
        row.account,
        row.sealed,
        row.tokenExpiresAtMs,
        nowMs,
        nowMs,
      );
    },

    async slackInstallation(installationKey) {
      const row = db
        .query<SlackInstallationDbRow, [string]>(
          "SELECT * FROM slack_installations WHERE installation_key = ?",
        )
        .get(installationKey);
      return row === null ? null : toSlackInstallation(row);
    },

    async slackInstallations() {
      return db
        .query<SlackInstallationDbRow, []>("SELECT * FROM slack_installations ORDER BY installation_key")
        .all()
        .map(toSlackInstallation);
    },

    async uninstallSlackInstallation(installationKey, reason, nowMs) {
      return (
        db
          .query(
            `UPDATE slack_installations SET sealed = NULL, token_expires_at_ms = NULL, uninstalled_at_ms = ?,
               uninstall_reason = ?, updated_at_ms = ?
             WHERE installation_key = ? AND uninstalled_at_ms IS NULL`,
          )
          .run(nowMs, reason, nowMs, installationKey).changes > 0
      );
    },
  };
}
