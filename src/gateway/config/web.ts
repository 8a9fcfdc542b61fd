/** The web chat (channels/web): whether it is on, its token and its rate limits. */
import { type Env, fail, nonEmpty, parsePositiveInteger } from "../../util/env.ts";
import { isLoopbackHost, type WebAccessPolicy, webAccessPolicy } from "../http/web-guard.ts";
import type { GatewayConfig, WebChatConfig } from "./types.ts";

/**
 * The web chat is on by default only where nobody else can reach it: a gateway listening on a
 * non-loopback address, or published at a non-loopback SWITCHBOARD_PUBLIC_URL, needs
 * SWITCHBOARD_WEB_TOKEN for it; without one it is off, and SWITCHBOARD_WEB=on is an error.
 */
export function parseWebChat(
  env: Env,
  listenHost: string,
  publicUrl: string | null,
  token: string | null,
): WebChatConfig {
  const switchRaw = nonEmpty(env, "SWITCHBOARD_WEB");
  if (switchRaw !== undefined && switchRaw !== "on" && switchRaw !== "off")
    fail("SWITCHBOARD_WEB", `must be on or off (got "${switchRaw}")`, "SWITCHBOARD_WEB=on");
  if (token !== null && token.length < 16)
    fail(
      "SWITCHBOARD_WEB_TOKEN",
      "must be at least 16 characters",
      "SWITCHBOARD_WEB_TOKEN=$(openssl rand -hex 24)",
    );
  const limits = {
    token,
    messagesPerSessionPerMinute: parsePositiveInteger(env, "SWITCHBOARD_WEB_MESSAGES_PER_MINUTE", 30),
    requestsPerIpPerMinute: parsePositiveInteger(env, "SWITCHBOARD_WEB_REQUESTS_PER_MINUTE", 120),
  };
  if (switchRaw === "off") return { enabled: false, ...limits };
  const exposedBy = !isLoopbackHost(listenHost)
    ? `SWITCHBOARD_HTTP_HOST=${listenHost} is reachable from other machines`
    : publicUrl !== null && !isLoopbackHost(new URL(publicUrl).hostname)
      ? `SWITCHBOARD_PUBLIC_URL=${publicUrl} publishes it`
      : null;
  if (exposedBy === null || token !== null) return { enabled: true, ...limits };
  if (switchRaw === "on")
    fail(
      "SWITCHBOARD_WEB_TOKEN",
      `must be set for SWITCHBOARD_WEB=on because ${exposedBy}; anyone who reaches the page could otherwise talk to the agent on your credits`,
      "SWITCHBOARD_WEB_TOKEN=$(openssl rand -hex 24)",
    );
  return {
    enabled: false,
    offReason: `${exposedBy} and SWITCHBOARD_WEB_TOKEN is not set; set it (or SWITCHBOARD_WEB=off to silence this)`,
    ...limits,
  };
}

/** Who may use the web chat, for the HTTP server. */
export function webAccessFor(config: GatewayConfig): WebAccessPolicy {
  return webAccessPolicy({
    listenHost: config.http.host,
    publicUrl: config.http.publicUrl,
    token: config.web.token,
  });
}
