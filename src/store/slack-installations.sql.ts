/**
 * The Slack installations table (channels/slack/installations.ts), the same on both engines but
 * for its integer type. `sealed` holds the installation (tokens included) sealed with the secret
 * box; NULL once uninstalled, when the row stays to name the uninstall.
 */
import type { SlackInstallationRow } from "../../channels/slack/installations.ts";
import type { Dialect } from "./tables.sql.ts";

export const slackInstallationsSchemaSql = ({ big }: Dialect): string => `
CREATE TABLE slack_installations (
  installation_key TEXT PRIMARY KEY,
  team_id TEXT,
  enterprise_id TEXT,
  app_id TEXT NOT NULL,
  account TEXT NOT NULL,
  sealed TEXT,
  token_expires_at_ms ${big},
  installed_at_ms ${big} NOT NULL,
  updated_at_ms ${big} NOT NULL,
  uninstalled_at_ms ${big},
  uninstall_reason TEXT
);
`;

/** A row as either engine returns it (PostgreSQL's BIGINT may come back as a string). */
export interface SlackInstallationDbRow {
  installation_key: string;
  team_id: string | null;
  enterprise_id: string | null;
  app_id: string;
  account: string;
  sealed: string | null;
  token_expires_at_ms: number | string | null;
  installed_at_ms: number | string;
  updated_at_ms: number | string;
  uninstalled_at_ms: number | string | null;
  uninstall_reason: string | null;
}

const nullableNumber = (value: number | string | null): number | null =>
  value === null ? null : Number(value);

export function toSlackInstallation(row: SlackInstallationDbRow): SlackInstallationRow {
  return {
    installationKey: row.installation_key,
    teamId: row.team_id,
    enterpriseId: row.enterprise_id,
    appId: row.app_id,
    account: row.account,
    sealed: row.sealed,
    tokenExpiresAtMs: nullableNumber(row.token_expires_at_ms),
    installedAtMs: Number(row.installed_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
    uninstalledAtMs: nullableNumber(row.uninstalled_at_ms),
    uninstallReason: row.uninstall_reason,
  };
}
