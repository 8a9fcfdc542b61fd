/**
 * Who may use the web chat. The chat page and its API are meant for the owner's own browser, so a
 * request is refused when it could come from another site (a foreign `Origin`, a form or
 * `text/plain` POST), through DNS rebinding (a `Host` that is not ours), or, where the gateway is
 * reachable from other machines, without the web chat token. See docs/operators.md ("Exposure").
 */
import { bearerToken, sameToken } from "./auth.ts";
import { apiError } from "./respond.ts";

export const WEB_TOKEN_ENV = "SWITCHBOARD_WEB_TOKEN";
export const PUBLIC_URL_ENV = "SWITCHBOARD_PUBLIC_URL";

/** Names that always mean this machine. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

export interface WebAccessPolicy {
  /** Host names (lower case, IPv6 in brackets, no port) the chat answers to. */
  allowedHosts: ReadonlySet<string>;
  /** Origins (`scheme://host[:port]`) allowed besides the page's own: the public URL's. */
  allowedOrigins: ReadonlySet<string>;
  /** Bearer token `/web/api/*` requires; null: none. */
  token: string | null;
}

export interface WebAccessSettings {
  /** The address the gateway listens on (SWITCHBOARD_HTTP_HOST). */
  listenHost: string;
  /** SWITCHBOARD_PUBLIC_URL, the address browsers use when it is not a loopback one. */
  publicUrl: string | null;
  token: string | null;
}

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "");
  return name === "localhost" || name === "::1" || /^127(\.\d{1,3}){3}$/.test(name);
}

/**
 * Loopback names, the public URL's host, and the listen address when it is a specific IP (an IP
 * literal cannot be rebound to another site's name; 0.0.0.0 and :: are not addresses a browser
 * uses).
 */
export function webAccessPolicy(settings: WebAccessSettings): WebAccessPolicy {
  const hosts = new Set(LOOPBACK_HOSTS);
  const origins = new Set<string>();
  const listen = hostnameOf(
    settings.listenHost.includes(":") ? `[${settings.listenHost}]` : settings.listenHost,
  );
  if (listen && isIpLiteral(listen) && listen !== "0.0.0.0" && listen !== "[::]") hosts.add(listen);
  if (settings.publicUrl) {
    const url = new URL(settings.publicUrl);
    hosts.add(url.hostname.toLowerCase());
    origins.add(url.origin);
  }
  return { allowedHosts: hosts, allowedOrigins: origins, token: settings.token };
}

/** `/` (the chat page) and `/web/*` (its API). */
export function isWebChatPath(pathname: string): boolean {
  return pathname === "/" || pathname.startsWith("/web/");
}

/** Why checkWebRequest refused: only `token` is a failed authentication (auth-limit.ts counts it). */
export type WebRefusalReason = "host" | "origin" | "token" | "media_type";

export interface WebRefusal {
  reason: WebRefusalReason;
  response: Response;
}

/**
 * Null when the request may proceed, else the refusal. Checks, in order: `Host`, `Origin`, the
 * token (API only) and, for a POST, `Content-Type: application/json` (which a cross-site form or
 * `text/plain` fetch cannot send without a CORS preflight, which this server never grants).
 */
export function checkWebRequest(request: Request, policy: WebAccessPolicy): WebRefusal | null {
  const foreignHost = checkHost(request, policy, "The web chat");
  if (foreignHost) return { reason: "host", response: foreignHost };
  const origin = request.headers.get("origin");
  if (origin !== null && !originAllowed(origin, request, policy))
    return {
      reason: "origin",
      response: apiError(
        403,
        "forbidden",
        `Requests from the origin "${origin.slice(0, 100)}" are refused; the web chat only answers its own page.`,
      ),
    };
  const isApi = new URL(request.url).pathname.startsWith("/web/api/");
  if (isApi && policy.token !== null) {
    const presented = bearerToken(request);
    if (presented === null || !sameToken(presented, policy.token))
      return {
        reason: "token",
        response: apiError(
          401,
          "unauthorized",
          `This web chat needs its token (${WEB_TOKEN_ENV}): enter it on the page, or send 'Authorization: Bearer <token>'.`,
          { "www-authenticate": 'Bearer realm="switchboard-web"' },
        ),
      };
  }
  if (request.method === "POST") {
    const type = mediaTypeOf(request.headers.get("content-type"));
    // An upload's bytes are octet-stream: like JSON, a type no cross-site form or simple fetch can
    // send without a CORS preflight (never granted), and only on the upload path.
    const upload = new URL(request.url).pathname === WEB_UPLOAD_PATH;
    if (upload ? type !== "application/octet-stream" : type !== "application/json")
      return {
        reason: "media_type",
        response: apiError(
          415,
          "unsupported_media_type",
          upload
            ? "Send the file's bytes with 'Content-Type: application/octet-stream'."
            : "Send the message as JSON with 'Content-Type: application/json'.",
        ),
      };
  }
  return null;
}

/**
 * Null when `Host` names this gateway (the policy's allowed host names), else a 403 that says
 * what to open instead. A foreign name is how DNS rebinding reaches a loopback-only server from a
 * page on another site; `what` names the part refusing ("The web chat", "/metrics").
 */
export function checkHost(request: Request, policy: WebAccessPolicy, what: string): Response | null {
  const host = hostnameOf(request.headers.get("host") ?? "");
  if (host !== null && policy.allowedHosts.has(host)) return null;
  return apiError(
    403,
    "forbidden",
    `${what} does not answer to the host name "${(request.headers.get("host") ?? "").slice(0, 100)}"; open it at localhost or set ${PUBLIC_URL_ENV} to the address you use.`,
  );
}

/** The `Host` header's name is a loopback one (localhost, 127.x, [::1]). */
export function hostIsLoopback(request: Request): boolean {
  const host = hostnameOf(request.headers.get("host") ?? "");
  return host !== null && isLoopbackHost(host);
}

/** The web chat's upload route (channels/web/routes.ts), the one POST that is not JSON. */
export const WEB_UPLOAD_PATH = "/web/api/uploads";

function originAllowed(origin: string, request: Request, policy: WebAccessPolicy): boolean {
  if (policy.allowedOrigins.has(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (sandboxed frames, file://) and anything unparsable
  }
  // The page's own origin: same host and port as the request, which the Host check allowed.
  return url.origin === origin && url.host === normalisedHost(request.headers.get("host") ?? "");
}

function mediaTypeOf(contentType: string | null): string | undefined {
  return contentType?.split(";")[0]?.trim().toLowerCase();
}

/** `Host` without its port, lower case, IPv6 in brackets; null when it is not a host. */
function hostnameOf(hostHeader: string): string | null {
  if (!HOST_HEADER.test(hostHeader)) return null;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return null;
  }
}

const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

/** `host[:port]` as the URL parser writes it (lower case, default port dropped). */
function normalisedHost(hostHeader: string): string {
  try {
    return new URL(`http://${hostHeader}`).host;
  } catch {
    return "";
  }
}

function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith("[") || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}
