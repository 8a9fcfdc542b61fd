/**
 * The Slack app installed into many workspaces through OAuth v2 (`SLACK_CLIENT_ID`,
 * `SLACK_CLIENT_SECRET`, `SLACK_STATE_SECRET`): the settings, and @slack/oauth's InstallProvider
 * behind `GET /slack/install` and `GET /slack/oauth_redirect` on the gateway's HTTP server.
 *
 * InstallProvider speaks Node's IncomingMessage/ServerResponse; the gateway's server speaks fetch
 * Request/Response. The two shims below carry exactly what it reads (url, cookie header) and
 * writes (status, headers, body).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { CodedError, Installation, InstallProvider, InstallURLOptions } from "@slack/oauth";
import { type Env, fail, nonEmpty, parseIntegerIn, parseUrl } from "../../src/util/env.ts";
import type { HttpRoute } from "../types.ts";

/** The bot scopes an install asks for when SLACK_SCOPES is unset: what the adapter uses. */
export const DEFAULT_SLACK_SCOPES = [
  "app_mentions:read",
  "assistant:write",
  "chat:write",
  "commands",
  "reactions:write",
  "im:history",
  "im:read",
  "im:write",
  "channels:history",
  "files:read",
  "files:write",
] as const;

export const SLACK_INSTALL_PATH = "/slack/install";
export const SLACK_REDIRECT_PATH = "/slack/oauth_redirect";
export const SLACK_INSTALLS_EVENTS_PATH = "/slack/events";

export interface SlackInstallsConfig {
  clientId: string;
  clientSecret: string;
  /** Signs the OAuth `state` (with a 10-minute expiry), checked with the browser's cookie at the redirect. */
  stateSecret: string;
  /** Verifies every workspace's events: one app, one signing secret. */
  signingSecret: string;
  scopes: string[];
  /** The app's Redirect URL (OAuth & Permissions), ending in /slack/oauth_redirect. */
  redirectUri: string;
  /** Web API base URL, ending with "/". */
  apiUrl: string;
  /** Slack's authorize page. */
  authorizeUrl: string;
  /** How long an OAuth state stays valid, in seconds (InstallProvider's cookie and state expiry). */
  stateTtlSeconds: number;
  /** SWITCHBOARD_SECRET_KEY: seals the installations' tokens; unset, a key file beside the SQLite database. */
  secretKey: string | undefined;
  /** How often rotating tokens are checked for refresh, in ms (SLACK_TOKEN_CHECK_SECONDS, default 300). */
  refreshCheckMs: number;
}

/**
 * The install flow's settings, or null when SLACK_CLIENT_ID is unset. The three OAuth variables
 * go together, and the events need SLACK_SIGNING_SECRET; SLACK_BOT_TOKEN over HTTP would serve
 * the same /slack/events path and is refused (install that workspace instead, or use Socket Mode).
 */
export function slackInstallsFromEnv(env: Env): SlackInstallsConfig | null {
  const clientId = nonEmpty(env, "SLACK_CLIENT_ID");
  if (!clientId) return null;
  const clientSecret = nonEmpty(env, "SLACK_CLIENT_SECRET");
  if (!clientSecret)
    fail(
      "SLACK_CLIENT_SECRET",
      "must be set with SLACK_CLIENT_ID (Basic Information → App Credentials)",
      "SLACK_CLIENT_SECRET=...",
    );
  const stateSecret = nonEmpty(env, "SLACK_STATE_SECRET");
  if (!stateSecret || stateSecret.length < 16)
    fail(
      "SLACK_STATE_SECRET",
      "must be set with SLACK_CLIENT_ID, at least 16 characters (it signs the install flow's state)",
      "SLACK_STATE_SECRET=$(openssl rand -hex 24)",
    );
  const signingSecret = nonEmpty(env, "SLACK_SIGNING_SECRET");
  if (!signingSecret)
    fail(
      "SLACK_SIGNING_SECRET",
      "must be set with SLACK_CLIENT_ID: installed workspaces send their events to /slack/events over HTTP",
      "SLACK_SIGNING_SECRET=(Basic Information → Signing Secret)",
    );
  if (nonEmpty(env, "SLACK_BOT_TOKEN") && !nonEmpty(env, "SLACK_APP_TOKEN"))
    fail(
      "SLACK_BOT_TOKEN",
      "is set with SLACK_CLIENT_ID, and both would serve /slack/events; install that workspace through /slack/install instead (and unset SLACK_BOT_TOKEN), or run the single bot in Socket Mode with SLACK_APP_TOKEN",
      "SLACK_CLIENT_ID=123.456 SLACK_CLIENT_SECRET=... SLACK_STATE_SECRET=... SLACK_SIGNING_SECRET=...",
    );
  const publicUrl = parseUrl(env, "SWITCHBOARD_PUBLIC_URL", "https://bot.example.com");
  const redirectUri =
    parseUrl(env, "SLACK_REDIRECT_URI", `https://bot.example.com${SLACK_REDIRECT_PATH}`) ??
    (publicUrl ? `${publicUrl}${SLACK_REDIRECT_PATH}` : undefined);
  if (!redirectUri)
    fail(
      "SLACK_REDIRECT_URI",
      `(or SWITCHBOARD_PUBLIC_URL) must be set with SLACK_CLIENT_ID: Slack sends the installer back to it, and it must be one of the app's Redirect URLs`,
      `SLACK_REDIRECT_URI=https://bot.example.com${SLACK_REDIRECT_PATH}`,
    );
  const scopes = (nonEmpty(env, "SLACK_SCOPES") ?? DEFAULT_SLACK_SCOPES.join(","))
    .split(",")
    .map((scope) => scope.trim())
    .filter(Boolean);
  const apiUrl = parseUrl(env, "SLACK_API_URL", "https://slack.com/api") ?? "https://slack.com/api";
  const authorizeUrl =
    parseUrl(env, "SLACK_AUTHORIZE_URL", "https://slack.com/oauth/v2/authorize") ??
    "https://slack.com/oauth/v2/authorize";
  return {
    clientId,
    clientSecret,
    stateSecret,
    signingSecret,
    scopes,
    redirectUri,
    apiUrl: apiUrl.endsWith("/") ? apiUrl : `${apiUrl}/`,
    authorizeUrl,
    stateTtlSeconds: 600,
    secretKey: nonEmpty(env, "SWITCHBOARD_SECRET_KEY"),
    refreshCheckMs:
      parseIntegerIn(env, "SLACK_TOKEN_CHECK_SECONDS", 300, {
        min: 1,
        max: 3600,
        what: "a number of seconds",
      }) * 1000,
  };
}

/** The secrets among the install flow's variables (kept out of logs). */
export const SLACK_INSTALL_SECRETS = ["SLACK_CLIENT_SECRET", "SLACK_STATE_SECRET"] as const;

export interface InstallRoutesOptions {
  installer: InstallProvider;
  installOptions: InstallURLOptions;
  /** After the installation was stored (and its adapter started or failed to). */
  installed(installation: Installation): Promise<void>;
  /** A refused callback (forged or expired state, a code Slack refused), for the log. */
  refused(error: CodedError): void;
}

/** `GET /slack/install` (an "Add to Slack" page that sets the state cookie) and `GET /slack/oauth_redirect`. */
export function installRoutes(options: InstallRoutesOptions): HttpRoute[] {
  return [
    {
      method: "GET",
      path: SLACK_INSTALL_PATH,
      handle: (request) =>
        nodeExchange(request, (req, res) =>
          options.installer.handleInstallPath(req, res, {}, options.installOptions),
        ),
    },
    {
      method: "GET",
      path: SLACK_REDIRECT_PATH,
      handle: (request) =>
        nodeExchange(request, (req, res) =>
          options.installer.handleCallback(req, res, {
            successAsync: async (installation, _options, _req, response) => {
              await options.installed(installation);
              const team =
                installation.team?.name ??
                installation.team?.id ??
                installation.enterprise?.name ??
                installation.enterprise?.id;
              page(
                response,
                200,
                "Installed",
                `switchboard is installed in ${team ?? "your workspace"}. You can close this page.`,
              );
            },
            failure: (error, _options, _req, response) => {
              options.refused(error);
              page(response, 400, "Not installed", refusalText(error));
            },
          }),
        ),
    },
  ];
}

/** What the installer sees when the callback is refused; nothing was stored. */
export function refusalText(error: CodedError): string {
  switch (error.code) {
    case "slack_oauth_invalid_state":
      return "This install link is not valid any more (it expired after 10 minutes, was used already, or was started in another browser). Nothing was installed: start again from /slack/install.";
    case "slack_oauth_missing_state":
    case "slack_oauth_missing_code":
      return "This page needs the code and state Slack sends back; nothing was installed. Start again from /slack/install.";
    case "slack_oauth_installer_authorization_error":
      return "The installation was cancelled; nothing was installed.";
    default:
      return `Slack did not complete the installation (${error.code}); nothing was installed. Start again from /slack/install.`;
  }
}

function page(response: ServerResponse, status: number, title: string, text: string): void {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8" });
  response.end(
    `<!doctype html><html><head><title>${title}</title></head><body><p>${escapeHtml(text)}</p></body></html>`,
  );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Runs a Node-style handler against a fetch Request and answers what it wrote. */
async function nodeExchange(
  request: Request,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<Response> {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  request.headers.forEach((value, key) => {
    headers[key] = value;
  });
  const req = {
    url: `${url.pathname}${url.search}`,
    headers,
    method: request.method,
  } as unknown as IncomingMessage;
  const out = new ResponseRecorder();
  await handler(req, out as unknown as ServerResponse);
  return out.toResponse();
}

/** The part of ServerResponse InstallProvider and the pages above use. */
class ResponseRecorder {
  #status = 200;
  readonly #headers = new Map<string, string | string[]>();
  #body = "";

  getHeader(name: string): string | string[] | undefined {
    return this.#headers.get(name.toLowerCase());
  }

  setHeader(name: string, value: string | string[]): this {
    this.#headers.set(name.toLowerCase(), value);
    return this;
  }

  writeHead(status: number, headers?: Record<string, string>): this {
    this.#status = status;
    for (const [name, value] of Object.entries(headers ?? {})) this.setHeader(name, value);
    return this;
  }

  end(body?: string): this {
    this.#body += body ?? "";
    return this;
  }

  toResponse(): Response {
    const headers = new Headers();
    for (const [name, value] of this.#headers)
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    return new Response(this.#body === "" ? null : this.#body, { status: this.#status, headers });
  }
}
