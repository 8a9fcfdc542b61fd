/**
 * The Slack app's installations (one per workspace, or per Enterprise Grid org for an org-wide
 * install), kept in switchboard's database. The store keeps what routing needs in the clear (team,
 * enterprise, app, the adapter's account) and the installation itself (tokens included) only
 * sealed: the store never sees a token. An uninstall removes the sealed installation and keeps
 * the row, so a reply still queued for that workspace fails naming the uninstall.
 *
 * `SlackInstallationStore` is implemented by src/store (SQLite and PostgreSQL).
 */
import type { Installation, InstallationQuery, InstallationStore } from "@slack/oauth";
import { SwitchboardError } from "../../src/errors.ts";
import type { SecretBox } from "../../src/util/secret-box.ts";

export interface SlackInstallationRow {
  /** `T…` for a workspace install, `E…` for an org-wide install. */
  installationKey: string;
  teamId: string | null;
  enterpriseId: string | null;
  appId: string;
  /** The adapter account the installation's conversations carry: `<team id>:<app id>`. */
  account: string;
  /** The installation (tokens included), sealed; null once uninstalled. */
  sealed: string | null;
  /** When the bot token expires (token rotation); null when it does not. */
  tokenExpiresAtMs: number | null;
  installedAtMs: number;
  updatedAtMs: number;
  uninstalledAtMs: number | null;
  /** Why it was uninstalled (`app_uninstalled`, `tokens_revoked`); null while installed. */
  uninstallReason: string | null;
}

export type SlackInstallationWrite = Pick<
  SlackInstallationRow,
  "installationKey" | "teamId" | "enterpriseId" | "appId" | "account" | "sealed" | "tokenExpiresAtMs"
>;

export interface SlackInstallationStore {
  /**
   * Stores an installation (a new install, a reinstall, a refreshed token): the row's tokens and
   * expiry are replaced; a reinstall clears the uninstall; `installedAtMs` is kept from the first install
   * unless it was uninstalled since.
   */
  saveSlackInstallation(row: SlackInstallationWrite, nowMs: number): Promise<void>;
  /** One installation by key, installed or not; null when it never was. */
  slackInstallation(installationKey: string): Promise<SlackInstallationRow | null>;
  /** Every installation, installed ones and uninstalled ones, by key. */
  slackInstallations(): Promise<SlackInstallationRow[]>;
  /**
   * Removes the tokens and marks the installation uninstalled with `reason`; the row (and every
   * conversation) stays. False when it was not installed.
   */
  uninstallSlackInstallation(installationKey: string, reason: string, nowMs: number): Promise<boolean>;
}

/** The key an installation is stored under: the org for an org-wide install, else the workspace. */
export function installationKeyOf(query: {
  teamId?: string | undefined;
  enterpriseId?: string | undefined;
  isEnterpriseInstall?: boolean | undefined;
}): string | null {
  if (query.isEnterpriseInstall) return query.enterpriseId ?? null;
  return query.teamId ?? query.enterpriseId ?? null;
}

/** The key of an installation as Slack returned it (see installationKeyOf). */
export function keyOfInstallation(installation: Installation): string | null {
  return installationKeyOf({
    teamId: installation.team?.id,
    enterpriseId: installation.enterprise?.id,
    isEnterpriseInstall: installation.isEnterpriseInstall,
  });
}

/** The account an installation's adapter has: the same `<team>:<app>` a single-bot Slack adapter has. */
export function accountOfInstallation(installation: Installation): string {
  const team = keyOfInstallation(installation);
  if (!team || !installation.appId)
    throw new SwitchboardError(
      "platform_rejected",
      "Slack's installation names no team (or org) and no app id",
    );
  return `${team}:${installation.appId}`;
}

/** What the sealed value is bound to, so a row's sealed installation cannot be moved to another row. */
const sealContext = (installationKey: string) => `slack-installation:${installationKey}`;

/**
 * @slack/oauth's InstallationStore over switchboard's database: installations are sealed with the
 * secret box before they are written and opened when read. `saved` is told of each store
 * (installs and token refreshes) after it committed.
 */
export class SealedInstallationStore implements InstallationStore {
  readonly #store: SlackInstallationStore;
  readonly #box: SecretBox;
  readonly #now: () => number;
  readonly #saved: (installation: Installation, row: SlackInstallationWrite) => void | Promise<void>;

  constructor(options: {
    store: SlackInstallationStore;
    box: SecretBox;
    now: () => number;
    saved: (installation: Installation, row: SlackInstallationWrite) => void | Promise<void>;
  }) {
    this.#store = options.store;
    this.#box = options.box;
    this.#now = options.now;
    this.#saved = options.saved;
  }

  async storeInstallation(installation: Installation): Promise<void> {
    const installationKey = keyOfInstallation(installation);
    if (installationKey === null || !installation.appId || !installation.bot?.token)
      throw new SwitchboardError(
        "platform_rejected",
        "Slack's installation has no team, app id or bot token; the app must request bot scopes",
      );
    const row: SlackInstallationWrite = {
      installationKey,
      teamId: installation.team?.id ?? null,
      enterpriseId: installation.enterprise?.id ?? null,
      appId: installation.appId,
      account: accountOfInstallation(installation),
      sealed: this.#box.seal(JSON.stringify(installation), sealContext(installationKey)),
      tokenExpiresAtMs: installation.bot.expiresAt === undefined ? null : installation.bot.expiresAt * 1000,
    };
    await this.#store.saveSlackInstallation(row, this.#now());
    await this.#saved(installation, row);
  }

  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation> {
    const key = installationKeyOf(query);
    const row = key === null ? null : await this.#store.slackInstallation(key);
    if (row === null || row.sealed === null)
      throw new SwitchboardError(
        "not_found",
        `The Slack app is not installed in ${key ?? "this workspace"}${row?.uninstallReason ? ` (uninstalled: ${row.uninstallReason})` : ""}; install it through /slack/install`,
      );
    return this.open(row);
  }

  async deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    const key = installationKeyOf(query);
    if (key !== null) await this.#store.uninstallSlackInstallation(key, "deleted", this.#now());
  }

  /** The installation a row holds; throws `config_invalid` naming SWITCHBOARD_SECRET_KEY for a wrong key. */
  open(row: SlackInstallationRow): Installation {
    if (row.sealed === null)
      throw new SwitchboardError(
        "not_found",
        `The Slack installation ${row.installationKey} was uninstalled`,
      );
    return JSON.parse(
      this.#box.open(
        row.sealed,
        sealContext(row.installationKey),
        `The Slack installation of ${row.installationKey}`,
      ),
    ) as Installation;
  }
}
