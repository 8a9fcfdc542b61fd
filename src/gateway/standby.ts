import { createWebChannel } from "../../channels/web/index.ts";
import { SwitchboardError } from "../errors.ts";
import { createOperatorService } from "../operator/service.ts";
import type { StoreBackend } from "../store/backend.ts";
import { systemClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { type GatewayConfig, modelNamesOf, webAccessFor } from "./config/index.ts";
import { apiError } from "./http/respond.ts";
import { type HttpServer, startHttpServer } from "./http/server.ts";
import { createMetrics } from "./metrics.ts";
import { databaseReadiness } from "./readiness.ts";

const STANDBY_DETAIL =
  "standby: another gateway is active on this database; this one takes over when it stops";

/**
 * What a standby gateway serves while it waits: liveness, readiness that says 503 (so a load
 * balancer sends webhooks and chat to the active gateway), metrics with
 * `switchboard_gateway_active 0`, and the operator API and console on the shared database. An
 * operator change made here is announced, so the active gateway acts on it at once. Chat, event
 * streams and webhooks need the runtime and channels, which only the active gateway runs: they
 * answer 503.
 */
export function startStandbyHttp(
  config: GatewayConfig,
  stores: StoreBackend,
  logger: Logger,
): Promise<HttpServer> {
  const announce = () => {
    stores.announceChange().catch((error) => logger.warn("gateway.announce_failed", { error }));
  };
  const metrics = createMetrics();
  return startHttpServer({
    host: config.http.host,
    port: config.http.port,
    logger: logger.child({ component: "http" }),
    webAccess: webAccessFor(config),
    webRequestsPerIpPerMinute: config.web.requestsPerIpPerMinute,
    services: {
      operator: createOperatorService({
        stores,
        clock: systemClock,
        onOutboxChanged: announce,
        onSchedulesChanged: announce,
        modelNames: modelNamesOf(config.file),
        budgets: { budgets: config.file.budgets, timezone: config.timezone },
      }),
      follow() {
        throw new SwitchboardError("platform_unavailable", `This gateway is a ${STANDBY_DETAIL}.`);
      },
      readiness: async () => ({
        ready: false,
        checks: { database: await databaseReadiness(stores), role: { ok: false, detail: STANDBY_DETAIL } },
      }),
      metrics: async () =>
        metrics.render(await stores.gauges(), { lanes: 0, nowMs: systemClock.now(), active: false }),
      routes: [],
      // Never started: its chat routes answer 503 "not accepting messages now".
      web: createWebChannel({}),
      operatorToken: config.operatorToken,
      operatorTokens: config.operatorTokens,
      metricsToken: config.metricsToken,
    },
    // A webhook that reaches the standby (no load balancer in front, or a stale one) is refused
    // with a status the platforms retry, never a 404 they may take as final.
    unmatched: () =>
      apiError(
        503,
        "platform_unavailable",
        `This gateway is a ${STANDBY_DETAIL}. Send this to the active gateway (route on /readyz).`,
        { "retry-after": "5" },
      ),
  });
}
