/**
 * Liveness and readiness (unauthenticated, for orchestrators) and metrics for Prometheus: open
 * from this machine, beyond it with a token (server.ts, docs/operators.md "Exposure").
 */

import { json } from "./respond.ts";
import type { Route } from "./router.ts";
import type { HttpServices } from "./types.ts";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** `httpMetrics`: the HTTP server's own series, appended to the gateway's. */
export function healthRoutes(
  services: Pick<HttpServices, "readiness" | "metrics">,
  httpMetrics: () => string = () => "",
): Route[] {
  return [
    {
      method: "GET",
      pattern: "/healthz",
      access: "public",
      handle: async () => json({ status: "ok" }),
    },
    {
      method: "GET",
      pattern: "/readyz",
      access: "public",
      handle: async () => {
        const readiness = await services.readiness();
        return json(readiness, readiness.ready ? 200 : 503);
      },
    },
    {
      method: "GET",
      pattern: "/metrics",
      access: "metrics",
      handle: async () =>
        new Response(joinExpositions(await services.metrics(), httpMetrics()), {
          status: 200,
          headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
        }),
    },
  ];
}

function joinExpositions(first: string, second: string): string {
  if (first === "" || first.endsWith("\n")) return first + second;
  return `${first}\n${second}`;
}
