/**
 * One Slack app installed into many workspaces, as Slack's OAuth v2 does it: the authorize page
 * (`GET /oauth/v2/authorize`, which here approves at once for the workspace the "browser" is signed
 * into and redirects with a single-use code), `oauth.v2.access` (the code, or a refresh token when
 * token rotation is on, for a bot token), `auth.revoke`, and the tokens each workspace's calls
 * are made with.
 *
 * An Enterprise Grid org (`addEnterprise`) can install the app org-wide: one bot token for the org,
 * good in the channels of every workspace of the org (`addWorkspace` with its `enterpriseId`).
 * Installations and tokens are keyed by the workspace id, or the org id (E…) for an org-wide one.
 */
import { randomBytes } from "node:crypto";
import type { SlackIdentity } from "./types.ts";
import type { WebApiAnswer } from "./web-api.ts";

export interface SlackOAuthAppOptions {
  clientId: string;
  clientSecret: string;
  /** Token rotation on: bot tokens expire after this many seconds and come with a refresh token. */
  tokenRotationSeconds?: number;
  /** How long a code from the authorize page can be exchanged. Default 10 minutes. */
  codeTtlMs?: number;
}

interface Grant {
  /** The workspace, or the org of an org-wide install. */
  key: string;
  redirectUri: string | null;
  scope: string;
  expiresAtMs: number;
  used: boolean;
}

interface IssuedToken {
  key: string;
  /** null: does not expire. */
  expiresAtMs: number | null;
  revoked: boolean;
}

export type TokenCheck =
  | { ok: true; identity: SlackIdentity }
  | { ok: false; error: "token_expired" | "token_revoked" };

const ok = (fields: Record<string, unknown>): WebApiAnswer => ({
  status: 200,
  body: { ok: true, ...fields },
});
const fail = (error: string): WebApiAnswer => ({ status: 200, body: { ok: false, error } });
const secret = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`;

/** An Enterprise Grid org the app can be installed into org-wide. */
export interface SlackOrg {
  enterpriseId: string;
  enterpriseName: string;
  appId: string;
  botUserId: string;
  botId: string;
}

export class SlackOAuthApp {
  readonly options: SlackOAuthAppOptions;
  readonly #workspaces = new Map<string, SlackIdentity>();
  /** Enterprise Grid orgs, by org id: the identity of the org-wide install's bot. */
  readonly #orgs = new Map<string, SlackIdentity & { enterpriseId: string }>();
  /** The workspace each channel is in, as the events built for a workspace named them. */
  readonly #channelTeams = new Map<string, string>();
  readonly #grants = new Map<string, Grant>();
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #refreshTokens = new Map<string, { key: string; used: boolean }>();
  readonly #now: () => number;
  /** Token exchanges answered, by grant type, for tests; `teamId` is the org's id for an org-wide install. */
  readonly exchanges: Array<{ grantType: "authorization_code" | "refresh_token"; teamId: string }> = [];

  constructor(options: SlackOAuthAppOptions, now: () => number) {
    this.options = options;
    this.#now = now;
  }

  addWorkspace(identity: SlackIdentity): void {
    this.#workspaces.set(identity.teamId, identity);
  }

  workspace(teamId: string): SlackIdentity | undefined {
    return this.#workspaces.get(teamId);
  }

  /** An Enterprise Grid org whose admin can install the app org-wide (`x-emulator-enterprise`). */
  addEnterprise(org: SlackOrg): void {
    this.#orgs.set(org.enterpriseId, {
      teamId: org.enterpriseId,
      teamName: org.enterpriseName,
      appId: org.appId,
      botUserId: org.botUserId,
      botId: org.botId,
      enterpriseId: org.enterpriseId,
      isEnterpriseInstall: true,
    });
  }

  /** The org-wide install's identity; undefined for an id that is no org. */
  enterprise(enterpriseId: string): SlackIdentity | undefined {
    return this.#orgs.get(enterpriseId);
  }

  /** Whether the app was ever installed org-wide in `enterpriseId` (its workspaces' events then say so). */
  installedOrgWide(enterpriseId: string): boolean {
    return this.#orgs.has(enterpriseId) && [...this.#tokens.values()].some((t) => t.key === enterpriseId);
  }

  /** Remembers which workspace a channel is in (from an event built for that workspace). */
  noteChannel(channel: string, teamId: string): void {
    if (!this.#channelTeams.has(channel)) this.#channelTeams.set(channel, teamId);
  }

  /**
   * Whether a token of `identity` can reach `channel`: a workspace's token its own workspace's
   * channels, an org-wide token those of every workspace of its org; a channel no event named is
   * reachable by any.
   */
  reaches(identity: SlackIdentity, channel: string): boolean {
    const team = this.#channelTeams.get(channel);
    if (team === undefined || team === identity.teamId) return true;
    return (
      identity.isEnterpriseInstall === true &&
      this.#workspaces.get(team)?.enterpriseId === identity.enterpriseId
    );
  }

  /**
   * The authorize page: the user (signed into `team`: the `team` parameter, else the
   * `x-emulator-team` header; an org admin installing org-wide: the `x-emulator-enterprise` header)
   * approves, and Slack redirects to `redirect_uri` with a code and the state it was given.
   */
  authorize(url: URL, request: Request): Response {
    const params = url.searchParams;
    if (params.get("client_id") !== this.options.clientId)
      return new Response("invalid_client_id", { status: 400 });
    const enterpriseId = request.headers.get("x-emulator-enterprise");
    if (enterpriseId !== null && !this.#orgs.has(enterpriseId))
      return new Response(`unknown Enterprise Grid org ${enterpriseId} (add it with addEnterprise)`, {
        status: 400,
      });
    const teamId = enterpriseId ?? params.get("team") ?? request.headers.get("x-emulator-team");
    if (teamId === null || (enterpriseId === null && !this.#workspaces.has(teamId)))
      return new Response(`unknown workspace ${teamId ?? "(none: pass team or x-emulator-team)"}`, {
        status: 400,
      });
    const redirectUri = params.get("redirect_uri");
    if (redirectUri === null) return new Response("redirect_uri is required here", { status: 400 });
    const code = secret("code-");
    this.#grants.set(code, {
      key: teamId,
      redirectUri,
      scope: params.get("scope") ?? "",
      expiresAtMs: this.#now() + (this.options.codeTtlMs ?? 600_000),
      used: false,
    });
    const target = new URL(redirectUri);
    target.searchParams.set("code", code);
    const state = params.get("state");
    if (state !== null) target.searchParams.set("state", state);
    return new Response(null, { status: 302, headers: { location: target.href } });
  }

  /** `oauth.v2.access`: client credentials as parameters or HTTP Basic. */
  access(params: Record<string, string>, authorization: string | null): WebApiAnswer {
    const basic = authorization?.startsWith("Basic ")
      ? Buffer.from(authorization.slice(6), "base64").toString("utf8").split(":")
      : [];
    const clientId = params.client_id ?? basic[0];
    const clientSecret = params.client_secret ?? basic[1];
    if (clientId !== this.options.clientId) return fail("invalid_client_id");
    if (clientSecret !== this.options.clientSecret) return fail("bad_client_secret");
    if (params.grant_type === "refresh_token") {
      const refresh = this.#refreshTokens.get(params.refresh_token ?? "");
      if (refresh === undefined || refresh.used) return fail("invalid_refresh_token");
      refresh.used = true;
      this.exchanges.push({ grantType: "refresh_token", teamId: refresh.key });
      return ok(this.#tokenFields(refresh.key));
    }
    const grant = this.#grants.get(params.code ?? "");
    if (grant === undefined || grant.used) return fail("invalid_code");
    grant.used = true;
    if (grant.expiresAtMs <= this.#now()) return fail("code_expired");
    if (params.redirect_uri !== undefined && params.redirect_uri !== grant.redirectUri)
      return fail("bad_redirect_uri");
    this.exchanges.push({ grantType: "authorization_code", teamId: grant.key });
    return ok({
      ...this.#tokenFields(grant.key),
      scope: grant.scope,
      authed_user: { id: "U0INSTALLER" },
      incoming_webhook: undefined,
    });
  }

  /** The workspace (or org, for an org-wide install) a bot token belongs to; null for a token this app never issued. */
  check(token: string): TokenCheck | null {
    const issued = this.#tokens.get(token);
    if (issued === undefined) return null;
    if (issued.revoked) return { ok: false, error: "token_revoked" };
    if (issued.expiresAtMs !== null && issued.expiresAtMs <= this.#now())
      return { ok: false, error: "token_expired" };
    return { ok: true, identity: this.#identityOf(issued.key) };
  }

  /** `auth.revoke` with a token: that token stops working. */
  revoke(token: string): void {
    const issued = this.#tokens.get(token);
    if (issued) issued.revoked = true;
  }

  /** The app uninstalled from `key` (a workspace, or an org it was installed in org-wide): every token of it stops working. */
  uninstall(key: string): void {
    for (const issued of this.#tokens.values()) if (issued.key === key) issued.revoked = true;
    for (const refresh of this.#refreshTokens.values()) if (refresh.key === key) refresh.used = true;
  }

  /** The bot tokens issued for `key` (a workspace, or an org installed org-wide) that still work, oldest first. */
  liveTokens(key: string): string[] {
    return [...this.#tokens]
      .filter(([token, t]) => t.key === key && this.check(token)?.ok)
      .map(([token]) => token);
  }

  #identityOf(key: string): SlackIdentity {
    return this.#orgs.get(key) ?? this.#workspaces.get(key)!;
  }

  /**
   * oauth.v2.access's token fields. An org-wide install names no team, only the org
   * (https://api.slack.com/enterprise/apps/reference); a workspace of an org names both.
   */
  #tokenFields(key: string): Record<string, unknown> {
    const identity = this.#identityOf(key);
    const orgWide = identity.isEnterpriseInstall === true;
    const org = identity.enterpriseId === undefined ? undefined : this.#orgs.get(identity.enterpriseId);
    const rotation = this.options.tokenRotationSeconds;
    const accessToken = rotation === undefined ? secret(`xoxb-${key}-`) : secret(`xoxe.xoxb-${key}-`);
    this.#tokens.set(accessToken, {
      key,
      expiresAtMs: rotation === undefined ? null : this.#now() + rotation * 1000,
      revoked: false,
    });
    const fields: Record<string, unknown> = {
      access_token: accessToken,
      token_type: "bot",
      scope: "chat:write,im:history",
      bot_user_id: identity.botUserId,
      app_id: identity.appId,
      team: orgWide ? null : { id: key, name: identity.teamName },
      enterprise:
        identity.enterpriseId === undefined
          ? null
          : { id: identity.enterpriseId, name: org?.teamName ?? identity.enterpriseId },
      is_enterprise_install: orgWide,
    };
    if (rotation !== undefined) {
      const refreshToken = secret(`xoxe-1-${key}-`);
      this.#refreshTokens.set(refreshToken, { key, used: false });
      fields.refresh_token = refreshToken;
      fields.expires_in = rotation;
    }
    return fields;
  }
}
