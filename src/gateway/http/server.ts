/**
 * The gateway's one HTTP server (Bun.serve): health and metrics, the operator API and console,
 * the web chat, and the channel adapters' webhooks.
 */
import type { HttpRoute } from "../../../channels/types.ts";
import type { Clock } from "../../util/clock.ts";
import { newId } from "../../util/ids.ts";
import type { Logger } from "../../util/log.ts";
import { KeyedRateLimiter } from "../../util/rate-limit.ts";
import { isServerBodyLimitError, limitBody } from "../../util/read-body.ts";
import { authenticateApp } from "./api-caller.ts";
import {
  authenticateMetrics,
  authenticateOperator,
  type OperatorCredentials,
  operatorApiEnabled,
} from "./auth.ts";
import { AuthFailureLimiter } from "./auth-limit.ts";
import { PayloadTooLargeError } from "./body.ts";
import { clientKey, forwardedByProxy, isLoopbackAddress } from "./client-address.ts";
import { conversationApiRoutes } from "./conversation-api.ts";
import { asErrorPage, wantsHtmlPage } from "./error-page.ts";
import { eventRoutes } from "./event-routes.ts";
import { healthRoutes } from "./health-routes.ts";
import { openAiCompatRoute } from "./openai-compat.ts";
import { openApiRoute } from "./openapi.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { apiError, errorToResponse } from "./respond.ts";
import { type Route, Router } from "./router.ts";
import { loadAssets, staticRoutes } from "./static-routes.ts";
import type { HttpServices } from "./types.ts";
import {
  checkHost,
  checkWebRequest,
  hostIsLoopback,
  isWebChatPath,
  type WebAccessPolicy,
  webAccessPolicy,
} from "./web-guard.ts";

export interface HttpServerOptions {
  /** Interface to listen on, e.g. "127.0.0.1". */
  host: string;
  /** 0 picks a free port (see the returned url). */
  port: number;
  services: HttpServices;
  logger: Logger;
  /** Largest operator API body; default 64 KiB. */
  maxBodyBytes?: number;
  /** Largest body of any request, webhooks included (Bun answers 413 above it); default 1 MiB. */
  maxRequestBodyBytes?: number;
  /** Comment line on quiet event streams this often; default 15 000 ms. */
  sseHeartbeatMs?: number;
  /** Who may use the web chat (`/`, `/web/*`); default: loopback host names, no token. */
  webAccess?: WebAccessPolicy;
  /** Web chat API requests (`/web/api/*`) per client address per minute; default 120. */
  webRequestsPerIpPerMinute?: number;
  /**
   * Wrong or missing tokens (`/api`, web chat, `/metrics`) per client address as a burst, then per
   * minute; past it they are answered 429 (a correct token never is). Default 10.
   */
  authFailuresPerIpPerMinute?: number;
  /** The rate limits' time (default: the system clock). */
  clock?: Pick<Clock, "now">;
  /** Answers requests outside `/api` that match no route (default: 404). */
  unmatched?: (request: Request) => Response;
}

export interface HttpServer {
  /** `http://host:port` without a trailing slash. */
  url: string;
  /** Ends open event streams, then closes every connection. */
  stop(): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const { services, logger } = options;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const openStreams = new Set<AbortController>();
  const webAccess =
    options.webAccess ?? webAccessPolicy({ listenHost: options.host, publicUrl: null, token: null });
  const webRequestsPerIp = new KeyedRateLimiter({ perMinute: options.webRequestsPerIpPerMinute ?? 120 });
  const clock = options.clock ?? { now: () => Date.now() };
  const now = () => clock.now();
  const authFailures = new AuthFailureLimiter({
    logger,
    now,
    ...(options.authFailuresPerIpPerMinute === undefined
      ? {}
      : { failuresPerMinute: options.authFailuresPerIpPerMinute }),
  });
  const credentials: OperatorCredentials = {
    shared: services.operatorToken,
    named: services.operatorTokens ?? [],
  };
  const track = (abort: AbortController) => {
    openStreams.add(abort);
    return () => openStreams.delete(abort);
  };
  const routes: Route[] = [
    ...healthRoutes(services, () => authFailures.render()),
    ...staticRoutes(await loadAssets(), operatorApiEnabled(credentials)),
    ...operatorRoutes({
      operator: services.operator,
      maxBodyBytes,
      onOperatorAction: () => {
        services.onOperatorAction?.();
        services.changes?.publish({ kind: "operator" });
      },
      dashboard: services.dashboard,
      conversationSettings: services.conversationSettings,
    }),
    ...eventRoutes({ services, heartbeatMs: options.sseHeartbeatMs ?? 15_000, logger, track }),
    ...conversationApiRoutes({
      services: services.conversations,
      decide: (approvalId, decision, actor) =>
        services.operator.approvals.decide(approvalId, decision, actor),
      maxBodyBytes,
      heartbeatMs: options.sseHeartbeatMs ?? 15_000,
      logger,
      track,
      onAction: () => {
        services.onOperatorAction?.();
        services.changes?.publish({ kind: "operator" });
      },
    }),
    // The web channel's routes may also come in `routes` (it is one of the adapters, possibly
    // wrapped): mount each of its paths once. Two other adapters on one path still fail loudly.
    ...withoutWebDuplicates(services.web.routes(), services.routes).map(mountAdapterRoute),
  ];
  routes.push(openApiRoute(routes));
  if (services.openaiCompat)
    routes.push(
      openAiCompatRoute({
        services: services.conversations,
        maxBodyBytes,
        heartbeatMs: options.sseHeartbeatMs ?? 15_000,
        logger,
        track,
      }),
    );
  const router = new Router(routes);

  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    // Bun's own limit answers with an empty 413 before any route runs, which no page can explain;
    // so Bun's is out of the way and `limitBody` enforces ours, answered with JSON that names it.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: async function handleRequest(request, bunServer): Promise<Response> {
      const startedMs = performance.now();
      const requestId = newId("req");
      const url = new URL(request.url);
      // Event streams stay open for as long as the client wants; heartbeats keep them busy.
      if (request.headers.get("accept")?.includes("text/event-stream")) bunServer.timeout(request, 0);
      const clientAddress = bunServer.requestIP(request)?.address ?? "unknown";
      let response = await route(
        limitBody(request, options.maxRequestBodyBytes ?? 1024 * 1024),
        url,
        requestId,
        clientAddress,
      );
      if (
        response.status >= 400 &&
        response.headers.get("content-type")?.startsWith("application/json") &&
        wantsHtmlPage(request, url)
      )
        response = await asErrorPage(response);
      const fields = {
        requestId,
        method: request.method,
        path: url.pathname,
        status: response.status,
        durationMs: Math.round(performance.now() - startedMs),
      };
      if (response.status >= 500) logger.warn("http.request", fields);
      else logger.debug("http.request", fields);
      return response;
    },
    error(error) {
      if (isServerBodyLimitError(error)) {
        logger.debug("http.body_too_large", { limitBytes: options.maxRequestBodyBytes ?? 1024 * 1024 });
        return apiError(413, "payload_too_large", "The request body is too large.");
      }
      logger.error("http.unhandled", { error });
      return apiError(500, "internal", "The gateway failed to handle this request; see its log.");
    },
  });

  async function route(
    request: Request,
    url: URL,
    requestId: string,
    clientAddress: string,
  ): Promise<Response> {
    if (isWebChatPath(url.pathname)) {
      const refused = checkWebRequest(request, webAccess);
      // The token is checked before the per-address request limit, so guesses never use up the
      // requests of the people behind the same address who hold the token.
      if (refused?.reason === "token") return authFailures.refuse("web", clientAddress, refused.response);
      if (refused) return refused.response;
      if (url.pathname.startsWith("/web/api/")) {
        const decision = webRequestsPerIp.take(clientAddress, now());
        if (!decision.allowed) return tooManyRequests(decision.retryAfterMs, "from this address");
      }
    }
    const match = router.match(request.method, url.pathname);
    const isApiPath = url.pathname === "/api" || url.pathname.startsWith("/api/");
    // Without the token the API answers nothing, not even "no such route".
    const access = match.kind === "found" ? match.route.access : isApiPath ? "operator" : "public";
    let operator: string | null = null;
    const app =
      access === "operator" || access === "api" ? authenticateApp(request, services.appTokens ?? []) : null;
    if (app !== null && access === "operator")
      return apiError(
        403,
        "forbidden",
        `The app token of ${app.name} may use only the conversation API (docs/api.md), not ${request.method} ${url.pathname}; use an operator token for it.`,
      );
    if ((access === "operator" || access === "api") && app === null) {
      const auth = authenticateOperator(request, credentials);
      if ("refused" in auth) {
        // With app tokens but no operator token, a conversation API route is open to the apps.
        const refused =
          access === "api" && auth.refused.status === 403 && (services.appTokens?.length ?? 0) > 0
            ? apiError(
                401,
                "unauthorized",
                "Send an app token (SWITCHBOARD_APP_TOKENS) or the operator token as 'Authorization: Bearer <token>'.",
                { "www-authenticate": 'Bearer realm="switchboard"' },
              )
            : auth.refused;
        return refused.status === 401 ? authFailures.refuse("api", clientAddress, refused) : refused;
      }
      operator = auth.name;
    }
    if (access === "metrics") {
      const foreignHost = checkHost(request, webAccess, "/metrics");
      if (foreignHost) return foreignHost;
      // Open to a scraper on this machine; through a reverse proxy on it (a forwarding header, or
      // the proxy's public Host) the client is elsewhere, so a token is needed as from anywhere.
      const local = isLoopbackAddress(clientAddress) && hostIsLoopback(request) && !forwardedByProxy(request);
      if (!local) {
        const refused = authenticateMetrics(request, services.metricsToken ?? null, credentials);
        if (refused)
          return refused.status === 401 ? authFailures.refuse("metrics", clientAddress, refused) : refused;
      }
    }
    if (match.kind === "not_found") {
      if (options.unmatched && !isApiPath) return options.unmatched(request);
      return apiError(404, "not_found", `No route for ${request.method} ${url.pathname}.`);
    }
    if (match.kind === "method_not_allowed")
      return apiError(
        405,
        "method_not_allowed",
        `${url.pathname} does not accept ${request.method}; use ${match.allowed.join(" or ")}.`,
        { allow: match.allowed.join(", ") },
      );
    try {
      return await match.route.handle({
        request,
        url,
        params: match.params,
        requestId,
        clientAddress,
        ...(operator === null ? {} : { operator }),
        ...(app === null ? {} : { app: app.name }),
      });
    } catch (error) {
      if (error instanceof PayloadTooLargeError) return apiError(413, "payload_too_large", error.message);
      // Past Bun's own limit Bun has already answered 413; the client sent too much, nothing failed.
      if (isServerBodyLimitError(error))
        return apiError(413, "payload_too_large", "The request body is too large.");
      const response = errorToResponse(error, requestId);
      if (response.status >= 500)
        logger.error("http.handler_failed", { requestId, method: request.method, path: url.pathname, error });
      return response;
    }
  }

  return {
    url: `http://${formatHost(server.hostname ?? options.host)}:${server.port}`,
    async stop() {
      for (const abort of openStreams) abort.abort();
      await server.stop(true);
    },
  };
}

/** 429 with Retry-After in whole seconds (at least 1). */
function tooManyRequests(retryAfterMs: number, from: string): Response {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return apiError(429, "rate_limited", `Too many requests ${from}; wait ${seconds} s and try again.`, {
    "retry-after": String(seconds),
  });
}

/** The web channel's routes, then the adapters' routes but for those on a web route's method and path. */
function withoutWebDuplicates(web: HttpRoute[], adapters: HttpRoute[]): HttpRoute[] {
  const webPaths = new Set(web.map((route) => `${route.method} ${route.path}`));
  return [...web, ...adapters.filter((route) => !webPaths.has(`${route.method} ${route.path}`))];
}

function mountAdapterRoute(route: HttpRoute): Route {
  return {
    method: route.method,
    pattern: route.path,
    access: "public",
    handle: ({ request, clientAddress }) => route.handle(request, { client: clientKey(clientAddress) }),
  };
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
