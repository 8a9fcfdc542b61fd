/**
 * One Slack app installed in many workspaces: each installation gets its own Slack adapter (its own
 * account `<team>:<app>`, token, rate limits and readiness line), so a reply leaves with the token
 * of the workspace its conversation is in and never another's. The app's one events route verifies
 * the signature, reads the event's team (or org) and hands the request to that workspace's
 * adapter; `app_uninstalled` and `tokens_revoked` remove the workspace's tokens here.
 *
 * Installations are read from switchboard's database (installations.ts, tokens sealed) at start and
 * whenever the install flow stores one; a rotating token is refreshed before it expires through
 * InstallProvider.authorize, which stores the new one.
 */
import type { Installation, InstallProvider } from "@slack/oauth";
import type { Clock, Timer } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { SecretBox } from "../../src/util/secret-box.ts";
import type { CommandMenu } from "../commands.ts";
import type { ChannelAdapter, HttpRoute } from "../types.ts";
import type { SlackAdapter } from "./adapter.ts";
import {
  installationKeyOf,
  keyOfInstallation,
  SealedInstallationStore,
  type SlackInstallationRow,
  type SlackInstallationStore,
} from "./installations.ts";
import { installRoutes, SLACK_INSTALLS_EVENTS_PATH, type SlackInstallsConfig } from "./oauth.ts";
import { verifySlackSignature } from "./verify.ts";

/** Refresh a rotating token this long before it expires (InstallProvider refreshes within 2 h). */
const REFRESH_WINDOW_MS = 2 * 60 * 60 * 1000;

export interface SlackWorkspacesDeps {
  config: SlackInstallsConfig;
  store: SlackInstallationStore;
  box: SecretBox;
  clock: Clock;
  logger: Logger;
  commands?: CommandMenu;
  /** Puts an installed workspace's adapter among the gateway's, under `slot`, and starts it (retrying as any channel). */
  attach(slot: string, make: () => ChannelAdapter): Promise<void>;
  /** Stops the slot's adapter and takes it away: nothing more is sent with that workspace's token. */
  detach(slot: string): Promise<void>;
  /** After an uninstall: the deliveries queued for `account` can now fail with `goneReason`. */
  uninstalled(account: string): void;
  /** How often rotating tokens are checked (default 5 minutes). */
  refreshCheckMs?: number;
}

/** The slot (adapters map key, readiness line `channel:<slot>`) of an installation. */
export const slotOfInstallation = (installationKey: string) => `slack:${installationKey}`;

export class SlackWorkspaces {
  readonly #deps: SlackWorkspacesDeps;
  readonly #installations: SealedInstallationStore;
  readonly #installer: InstallProvider;
  /** The decrypted installation of every installed workspace, by installation key. */
  readonly #installed = new Map<string, Installation>();
  /** Why a workspace's account has no adapter any more, by account. */
  readonly #gone = new Map<string, string>();
  /** Installation keys whose adapter is attached. */
  readonly #attached = new Set<string>();
  #refreshTimer: Timer | null = null;
  #refreshing: Promise<void> | null = null;

  constructor(deps: SlackWorkspacesDeps) {
    this.#deps = deps;
    this.#installations = new SealedInstallationStore({
      store: deps.store,
      box: deps.box,
      now: () => deps.clock.now(),
      saved: (installation, row) => {
        this.#installed.set(row.installationKey, installation);
        this.#gone.delete(row.account);
      },
    });
    const { InstallProvider: Provider } = require("@slack/oauth") as typeof import("@slack/oauth");
    this.#installer = new Provider({
      clientId: deps.config.clientId,
      clientSecret: deps.config.clientSecret,
      stateSecret: deps.config.stateSecret,
      stateCookieExpirationSeconds: deps.config.stateTtlSeconds,
      installationStore: this.#installations,
      authorizationUrl: deps.config.authorizeUrl,
      directInstall: false,
      logger: oauthLogger(deps.logger),
      clientOptions: { slackApiUrl: deps.config.apiUrl, retryConfig: { retries: 0 } },
    });
  }

  /**
   * Opens every stored installation (a key that is not the one they were sealed with stops the
   * start, naming SWITCHBOARD_SECRET_KEY), attaches an adapter for each installed workspace and
   * starts the token refresh.
   */
  async start(): Promise<void> {
    const rows = await this.#deps.store.slackInstallations();
    for (const row of rows) {
      if (row.sealed === null) {
        this.#gone.set(row.account, goneReason(row));
        continue;
      }
      this.#installed.set(row.installationKey, this.#installations.open(row));
    }
    for (const key of this.#installed.keys()) await this.#attach(key);
    this.#deps.logger.info("slack.installations_loaded", {
      installed: this.#installed.size,
      uninstalled: this.#gone.size,
      keySource: this.#deps.box.source.kind,
    });
    await this.refreshExpiring();
    this.#refreshTimer = this.#deps.clock.every(
      this.#deps.refreshCheckMs ?? 5 * 60_000,
      () => void this.refreshExpiring(),
    );
  }

  stop(): void {
    this.#refreshTimer?.cancel();
    this.#refreshTimer = null;
  }

  /** Install page, OAuth redirect and the app's events route. */
  routes(): HttpRoute[] {
    return [
      ...installRoutes({
        installer: this.#installer,
        installOptions: { scopes: this.#deps.config.scopes, redirectUri: this.#deps.config.redirectUri },
        installed: async (installation) => {
          const key = keyOfInstallation(installation)!;
          this.#deps.logger.info("slack.installed", {
            installation: key,
            team: installation.team?.name,
            tokenRotation: installation.bot?.refreshToken !== undefined,
          });
          if (this.#attached.has(key)) await this.#deps.detach(slotOfInstallation(key));
          this.#attached.delete(key);
          await this.#attach(key);
          await this.refreshExpiring();
        },
        refused: (error) =>
          this.#deps.logger.warn("slack.install_refused", {
            code: error.code,
            error: error.message,
            hint: "nothing was stored; the installer starts again from /slack/install",
          }),
      }),
      { method: "POST", path: SLACK_INSTALLS_EVENTS_PATH, handle: (request) => this.#handleEvents(request) },
    ];
  }

  /** Why a reply for `account` cannot be sent (its workspace uninstalled the app); null when that is not why. */
  goneReason(account: string): string | null {
    return this.#gone.get(account) ?? null;
  }

  /** The bot token of an installed workspace now (rotations replace it). */
  tokenOf(installationKey: string): string {
    const token = this.#installed.get(installationKey)?.bot?.token;
    if (token === undefined) throw new Error(`The Slack app is not installed in ${installationKey}`);
    return token;
  }

  /**
   * Refreshes every rotating token that expires within 2 hours: InstallProvider.authorize calls
   * oauth.v2.access with the refresh token and stores the new tokens (sealed) before this resolves.
   * One pass at a time: a refresh token is single-use.
   */
  refreshExpiring(): Promise<void> {
    this.#refreshing ??= this.#refreshPass().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #refreshPass(): Promise<void> {
    const nowMs = this.#deps.clock.now();
    for (const [key, installation] of this.#installed) {
      const expiresAt = installation.bot?.expiresAt;
      if (installation.bot?.refreshToken === undefined || expiresAt === undefined) continue;
      if (expiresAt * 1000 - nowMs > REFRESH_WINDOW_MS) continue;
      const before = installation.bot.token;
      try {
        await this.#installer.authorize({
          teamId: installation.team?.id,
          enterpriseId: installation.enterprise?.id,
          isEnterpriseInstall: installation.isEnterpriseInstall ?? false,
        });
        const refreshed = this.#installed.get(key)?.bot?.token !== before;
        if (refreshed) this.#deps.logger.info("slack.token_refreshed", { installation: key });
        else
          this.#deps.logger.warn("slack.token_refresh_failed", {
            installation: key,
            hint: "Slack refused the refresh token; tried again at the next check. Reinstall if it keeps failing",
          });
      } catch (error) {
        this.#deps.logger.warn("slack.token_refresh_failed", { installation: key, error: describe(error) });
      }
    }
  }

  async #attach(key: string): Promise<void> {
    const installation = this.#installed.get(key)!;
    const { createSlackAdapter } = require("./adapter.ts") as typeof import("./adapter.ts");
    const logger = this.#deps.logger.child({ installation: key });
    const make = (): ChannelAdapter =>
      createSlackAdapter(
        {
          mode: "http",
          botToken: installation.bot!.token,
          signingSecret: this.#deps.config.signingSecret,
          apiUrl: this.#deps.config.apiUrl,
          eventsPath: SLACK_INSTALLS_EVENTS_PATH,
          // The installation key is its workspace, or its org for an org-wide install.
          ...(installation.appId ? { teamId: key, appId: installation.appId } : {}),
        },
        {
          clock: this.#deps.clock,
          logger,
          ...(this.#deps.commands ? { commands: this.#deps.commands } : {}),
          onSkip: (skip) => logger.debug("slack.event_skipped", { ...skip }),
          botToken: () => this.tokenOf(key),
          sharedEventsRoute: true,
        },
      );
    this.#attached.add(key);
    await this.#deps.attach(slotOfInstallation(key), make);
  }

  async #handleEvents(request: Request): Promise<Response> {
    const rawBody = await request.text();
    const verdict = verifySlackSignature(
      {
        timestampHeader: request.headers.get("x-slack-request-timestamp"),
        signatureHeader: request.headers.get("x-slack-signature"),
        rawBody,
      },
      this.#deps.config.signingSecret,
      this.#deps.clock.now(),
    );
    if (!verdict.ok) return text(401, `Slack request signature rejected (${verdict.reason})`);
    const body = parseBody(request, rawBody);
    if (body === null) return text(400, "Expected a JSON Events API body or a form Slack sends");
    if (body.type === "url_verification") return Response.json({ challenge: body.challenge });
    const where = workspaceOf(body);
    const key = installationKeyOf(where);
    if (key === null) return text(400, "The request names no team or enterprise");
    const event = isObject(body.event) ? body.event : null;
    if (
      event?.type === "app_uninstalled" ||
      (event?.type === "tokens_revoked" && this.#revokesBot(key, event))
    ) {
      await this.#uninstall(key, String(event.type));
      return new Response(null, { status: 200 });
    }
    const row = this.#installed.has(key) ? null : await this.#deps.store.slackInstallation(key);
    if (!this.#installed.has(key)) {
      // Nothing here can take it; answering 200 stops Slack's retries of an event nobody will read.
      this.#deps.logger.warn("slack.event_for_workspace_not_installed", {
        installation: key,
        uninstalled: row?.uninstallReason ?? null,
        eventId: typeof body.event_id === "string" ? body.event_id : undefined,
      });
      return new Response(null, { status: 200 });
    }
    const adapter = this.#adapterOf(key);
    const route = adapter?.sharedEventsRoute();
    if (!route) return text(503, "This workspace's Slack adapter is starting; Slack will retry");
    return route.handle(
      new Request(request.url, { method: "POST", headers: request.headers, body: rawBody }),
    );
  }

  /** Set by the gateway: the adapter now in a slot (a failed start replaces it with a fresh one). */
  adapterInSlot: (slot: string) => ChannelAdapter | undefined = () => undefined;

  #adapterOf(key: string): SlackAdapter | undefined {
    const adapter = this.adapterInSlot(slotOfInstallation(key));
    return adapter && "sharedEventsRoute" in adapter ? (adapter as SlackAdapter) : undefined;
  }

  /** `tokens_revoked` names the revoked tokens by their user; only the bot's revocation ends the install. */
  #revokesBot(key: string, event: Record<string, unknown>): boolean {
    const bots = isObject(event.tokens) && Array.isArray(event.tokens.bot) ? event.tokens.bot : [];
    const botUser = this.#installed.get(key)?.bot?.userId;
    return botUser !== undefined && bots.includes(botUser);
  }

  async #uninstall(key: string, reason: string): Promise<void> {
    const removed = await this.#deps.store.uninstallSlackInstallation(key, reason, this.#deps.clock.now());
    this.#installed.delete(key);
    if (this.#attached.delete(key)) await this.#deps.detach(slotOfInstallation(key));
    const row = await this.#deps.store.slackInstallation(key);
    if (row === null) return;
    this.#gone.set(row.account, goneReason(row));
    if (removed)
      this.#deps.logger.warn("slack.uninstalled", { installation: key, reason, account: row.account });
    this.#deps.uninstalled(row.account);
  }
}

function goneReason(row: SlackInstallationRow): string {
  const at = row.uninstalledAtMs === null ? "" : ` at ${new Date(row.uninstalledAtMs).toISOString()}`;
  return `the Slack app was uninstalled from workspace ${row.installationKey}${at} (${row.uninstallReason ?? "uninstalled"}), so its tokens are gone and nothing is sent there; reinstall it through /slack/install, then \`switchboard outbox retry\` what should still go`;
}

/**
 * The team and org a request comes from: Events API bodies, interactivity payloads, slash commands.
 * An event names the installation it is for in `authorizations[0]` (as Bolt reads it): for an
 * org-wide install that is the only place `is_enterprise_install` is sure to be, while `team_id`
 * is the member workspace the event happened in.
 */
function workspaceOf(body: Record<string, unknown>): {
  teamId?: string;
  enterpriseId?: string;
  isEnterpriseInstall?: boolean;
} {
  const team = isObject(body.team) ? body.team.id : undefined;
  const enterprise = isObject(body.enterprise) ? body.enterprise.id : undefined;
  const authorization =
    Array.isArray(body.authorizations) && isObject(body.authorizations[0]) ? body.authorizations[0] : null;
  const teamId = stringOr(body.team_id) ?? stringOr(team) ?? stringOr(authorization?.team_id);
  const enterpriseId =
    stringOr(authorization?.enterprise_id) ?? stringOr(body.enterprise_id) ?? stringOr(enterprise);
  const isEnterpriseInstall =
    authorization !== null
      ? authorization.is_enterprise_install === true
      : body.is_enterprise_install === true || body.is_enterprise_install === "true";
  return {
    ...(teamId ? { teamId } : {}),
    ...(enterpriseId ? { enterpriseId } : {}),
    isEnterpriseInstall,
  };
}

function parseBody(request: Request, rawBody: string): Record<string, unknown> | null {
  try {
    const type = request.headers.get("content-type") ?? "";
    if (type.startsWith("application/x-www-form-urlencoded")) {
      const form = new URLSearchParams(rawBody);
      const payload = form.get("payload");
      const parsed: unknown = payload === null ? Object.fromEntries(form) : JSON.parse(payload);
      return isObject(parsed) ? parsed : null;
    }
    const parsed: unknown = JSON.parse(rawBody);
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** @slack/oauth's logger, onto the gateway's (debug and info are its own chatter). */
function oauthLogger(logger: Logger): import("@slack/oauth").Logger {
  const { LogLevel } = require("@slack/oauth") as typeof import("@slack/oauth");
  const line = (args: unknown[]) =>
    args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(" ");
  return {
    debug: () => {},
    info: () => {},
    warn: (...args) => logger.warn("slack.oauth", { message: line(args) }),
    error: (...args) => logger.warn("slack.oauth", { message: line(args) }),
    setLevel: () => {},
    getLevel: () => LogLevel.WARN,
    setName: () => {},
  };
}
