/** Liveness, readiness and metrics: unauthenticated, for orchestrators and Prometheus. */

import { json } from "./respond.ts";
import type { Route } from "./router.ts";
import type { HttpServices } from "./types.ts";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export function healthRoutes(services: Pick<HttpServices, "readiness" | "metrics">): Route[] {
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
      access: "public",
      handle: async () =>
        new Response(await services.metrics(), {
          status: 200,
          headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
        }),
    },
  ];
}
