/**
 * The Slack installation store (SlackInstallationStore), written once: its SQL with the engine's
 * placeholders. Each statement stands alone (no transaction spans two), so an engine gives only
 * its placeholder and a way to run one statement.
 */
import type { SlackInstallationStore } from "../../channels/slack/installations.ts";
import { type SlackInstallationDbRow, toSlackInstallation } from "./slack-installations.sql.ts";

/** How an engine runs the store's SQL. */
export interface SlackInstallationEngine {
  /** Placeholder `n` (from 1). */
  param(n: number): string;
  /** The rows of one statement. */
  rows(sql: string, params: unknown[]): Promise<unknown[]>;
}

export function slackInstallationStore(engine: SlackInstallationEngine): SlackInstallationStore {
  const p = engine.param;
  const rows = async (sql: string, params: unknown[]) =>
    (await engine.rows(sql, params)) as SlackInstallationDbRow[];
  // A reinstall clears the uninstall; the first install time stays unless it was uninstalled since.
  const SAVE = `
    INSERT INTO slack_installations (installation_key, team_id, enterprise_id, app_id, account, sealed,
      token_expires_at_ms, installed_at_ms, updated_at_ms, uninstalled_at_ms, uninstall_reason)
    VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}, ${p(8)}, NULL, NULL)
    ON CONFLICT (installation_key) DO UPDATE SET
      team_id = excluded.team_id, enterprise_id = excluded.enterprise_id, app_id = excluded.app_id,
      account = excluded.account, sealed = excluded.sealed, token_expires_at_ms = excluded.token_expires_at_ms,
      installed_at_ms = CASE WHEN slack_installations.uninstalled_at_ms IS NULL
        THEN slack_installations.installed_at_ms ELSE excluded.installed_at_ms END,
      updated_at_ms = excluded.updated_at_ms, uninstalled_at_ms = NULL, uninstall_reason = NULL`;
  const ONE = `SELECT * FROM slack_installations WHERE installation_key = ${p(1)}`;
  const ALL = "SELECT * FROM slack_installations ORDER BY installation_key";
  const UNINSTALL = `
    UPDATE slack_installations SET sealed = NULL, token_expires_at_ms = NULL, uninstalled_at_ms = ${p(1)},
      uninstall_reason = ${p(2)}, updated_at_ms = ${p(1)}
    WHERE installation_key = ${p(3)} AND uninstalled_at_ms IS NULL
    RETURNING installation_key`;

  return {
    async saveSlackInstallation(row, nowMs) {
      await engine.rows(SAVE, [
        row.installationKey,
        row.teamId,
        row.enterpriseId,
        row.appId,
        row.account,
        row.sealed,
        row.tokenExpiresAtMs,
        nowMs,
      ]);
    },

    async slackInstallation(installationKey) {
      const [row] = await rows(ONE, [installationKey]);
      return row === undefined ? null : toSlackInstallation(row);
    },

    async slackInstallations() {
      return (await rows(ALL, [])).map(toSlackInstallation);
    },

    async uninstallSlackInstallation(installationKey, reason, nowMs) {
      return (await engine.rows(UNINSTALL, [nowMs, reason, installationKey])).length > 0;
    },
  };
}
