/** The built-in web tools (web_fetch, web_search) and the variables MCP servers' headers reference. */
import { BRAVE_SEARCH_URL, type SearchBackend } from "../../tools/web/search.ts";
import { type Env, fail, onOff, parseUrl } from "../../util/env.ts";
import type { FileConfig } from "./file.ts";
import type { GatewayConfig } from "./types.ts";

/** web_fetch: offered unless SWITCHBOARD_WEB_FETCH=off; private addresses only with SWITCHBOARD_FETCH_ALLOW_PRIVATE=on. */
export function parseWebFetch(env: Env): GatewayConfig["webFetch"] {
  return {
    enabled: onOff(env, "SWITCHBOARD_WEB_FETCH", true),
    allowPrivate: onOff(env, "SWITCHBOARD_FETCH_ALLOW_PRIVATE", false),
  };
}

/** At most one web_search backend: a SearXNG instance, or the Brave Search API with a key. */
export function parseWebSearch(env: Env, braveKey: string | undefined): SearchBackend | null {
  const searxng = parseUrl(env, "SWITCHBOARD_SEARXNG_URL", "http://127.0.0.1:8888");
  if (searxng && braveKey)
    fail(
      "SWITCHBOARD_SEARXNG_URL",
      "and SWITCHBOARD_BRAVE_API_KEY are both set; web_search uses one backend, so keep one of them",
      "SWITCHBOARD_SEARXNG_URL=http://127.0.0.1:8888",
    );
  if (searxng) return { kind: "searxng", url: searxng };
  if (braveKey) {
    const url = parseUrl(env, "SWITCHBOARD_BRAVE_API_URL", BRAVE_SEARCH_URL) ?? BRAVE_SEARCH_URL;
    return { kind: "brave", apiKey: braveKey, url };
  }
  return null;
}

/** The ${VAR}s MCP headers name, with their values kept as secrets so no log line shows them. */
export function referencedVariables(
  file: FileConfig,
  env: Env,
  secrets: string[],
): Record<string, string | undefined> {
  const picked: Record<string, string | undefined> = {};
  for (const server of Object.values(file.mcpServers)) {
    if (!("headers" in server)) continue;
    for (const value of Object.values(server.headers)) {
      for (const [, name] of value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
        picked[name!] = env[name!];
        if (env[name!]) secrets.push(env[name!]!);
      }
    }
  }
  return picked;
}
