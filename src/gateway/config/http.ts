/** Where the HTTP server listens, and the origin browsers reach it at. */
import { type Env, fail, nonEmpty, parseUrl } from "../../util/env.ts";

/** SWITCHBOARD_HTTP_PORT (default 8787; 0: any free port). */
export function parsePort(env: Env): number {
  const portRaw = nonEmpty(env, "SWITCHBOARD_HTTP_PORT") ?? "8787";
  const port = Number(portRaw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    fail(
      "SWITCHBOARD_HTTP_PORT",
      `must be a port number from 0 to 65535 (got "${portRaw}")`,
      "SWITCHBOARD_HTTP_PORT=8787",
    );
  }
  return port;
}

/** SWITCHBOARD_HTTP_HOST (default 127.0.0.1: this machine only). */
export function parseHost(env: Env): string {
  return nonEmpty(env, "SWITCHBOARD_HTTP_HOST") ?? "127.0.0.1";
}

/** SWITCHBOARD_PUBLIC_URL: an origin only, since the pages call the gateway at absolute paths. */
export function parsePublicUrl(env: Env): string | null {
  const example = "https://chat.example.com";
  const raw = parseUrl(env, "SWITCHBOARD_PUBLIC_URL", example);
  if (raw === undefined) return null;
  const url = new URL(raw);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password)
    fail(
      "SWITCHBOARD_PUBLIC_URL",
      `must be an origin (scheme, host and optional port), without a path, query or credentials (got "${raw}")`,
      `SWITCHBOARD_PUBLIC_URL=${example}`,
    );
  return url.origin;
}
