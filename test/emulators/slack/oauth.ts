/**
 * One Slack app installed into many workspaces, as Slack's OAuth v2 does it: the authorize page
 * (`GET /oauth/v2/authorize`, which here approves at once for the workspace the "browser" is signed
 * into and redirects with a single-use code), `oauth.v2.access` (the code, or a refresh token when
 * token rotation is on, for a bot token), `auth.revoke`, and the tokens each workspace's calls
 * are made with.
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
  teamId: string;
  redirectUri: string | null;
  scope: string;
  expiresAtMs: number;
  used: boolean;
}

interface IssuedToken {
  teamId: string;
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

export class SlackOAuthApp {
  readonly options: SlackOAuthAppOptions;
  readonly #workspaces = new Map<string, SlackIdentity>();
  readonly #grants = new Map<string, Grant>();
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #refreshTokens = new Map<string, { teamId: string; used: boolean }>();
  readonly #now: () => number;
  /** Token exchanges answered, by grant type, for tests. */
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

  /**
   * The authorize page: the user (signed into `team`: the `team` parameter, else the
   * `x-emulator-team` header) approves, and Slack redirects to `redirect_uri` with a code and the
   * state it was given.
   */
  authorize(url: URL, request: Request): Response {
    const params = url.searchParams;
    if (params.get("client_id") !== this.options.clientId)
      return new Response("invalid_client_id", { status: 400 });
    const teamId = params.get("team") ?? request.headers.get("x-emulator-team");
    if (teamId === null || !this.#workspaces.has(teamId))
      return new Response(`unknown workspace ${teamId ?? "(none: pass team or x-emulator-team)"}`, {
        status: 400,
      });
    const redirectUri = params.get("redirect_uri");
    if (redirectUri === null) return new Response("redirect_uri is required here", { status: 400 });
    const code = secret("code-");
    this.#grants.set(code, {
      teamId,
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
      this.exchanges.push({ grantType: "refresh_token", teamId: refresh.teamId });
      return ok(this.#tokenFields(refresh.teamId));
    }
    const grant = this.#grants.get(params.code ?? "");
    if (grant === undefined || grant.used) return fail("invalid_code");
    grant.used = true;
    if (grant.expiresAtMs <= this.#now()) return fail("code_expired");
    if (params.redirect_uri !== undefined && params.redirect_uri !== grant.redirectUri)
      return fail("bad_redirect_uri");
    const identity = this.#workspaces.get(grant.teamId)!;
    this.exchanges.push({ grantType: "authorization_code", teamId: grant.teamId });
    return ok({
      ...this.#tokenFields(grant.teamId),
      scope: grant.scope,
      bot_user_id: identity.botUserId,
      authed_user: { id: "U0INSTALLER" },
      incoming_webhook: undefined,
      is_enterprise_install: false,
    });
  }

  /** The workspace a bot token belongs to; null for a token this app never issued. */
  check(token: string): TokenCheck | null {
    const issued = this.#tokens.get(token);
    if (issued === undefined) return null;
    if (issued.revoked) return { ok: false, error: "token_revoked" };
    if (issued.expiresAtMs !== null && issued.expiresAtMs <= this.#now())
      return { ok: false, error: "token_expired" };
    return { ok: true, identity: this.#workspaces.get(issued.teamId)! };
  }

  /** `auth.revoke` with a token: that token stops working. */
  revoke(token: string): void {
    const issued = this.#tokens.get(token);
    if (issued) issued.revoked = true;
  }

  /** The app uninstalled from `teamId`: every token of that workspace stops working. */
  uninstall(teamId: string): void {
    for (const issued of this.#tokens.values()) if (issued.teamId === teamId) issued.revoked = true;
    for (const refresh of this.#refreshTokens.values()) if (refresh.teamId === teamId) refresh.used = true;
  }

  /** The bot tokens issued for `teamId` that still work, oldest first. */
  liveTokens(teamId: string): string[] {
    return [...this.#tokens]
      .filter(([token, t]) => t.teamId === teamId && this.check(token)?.ok)
      .map(([token]) => token);
  }

  #tokenFields(teamId: string): Record<string, unknown> {
    const identity = this.#workspaces.get(teamId)!;
    const rotation = this.options.tokenRotationSeconds;
    const accessToken = rotation === undefined ? secret(`xoxb-${teamId}-`) : secret(`xoxe.xoxb-${teamId}-`);
    this.#tokens.set(accessToken, {
      teamId,
      expiresAtMs: rotation === undefined ? null : this.#now() + rotation * 1000,
      revoked: false,
    });
    const fields: Record<string, unknown> = {
      access_token: accessToken,
      token_type: "bot",
      scope: "chat:write,im:history",
      bot_user_id: identity.botUserId,
      app_id: identity.appId,
      team: { id: teamId, name: identity.teamName },
      enterprise: null,
      is_enterprise_install: false,
    };
    if (rotation !== undefined) {
      const refreshToken = secret(`xoxe-1-${teamId}-`);
      this.#refreshTokens.set(refreshToken, { teamId, used: false });
      fields.refresh_token = refreshToken;
      fields.expires_in = rotation;
    }
    return fields;
  }
}
