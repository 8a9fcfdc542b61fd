/**
 * The gateway's one HTTP server (Bun.serve): health and metrics, the operator API and console,
 * the web chat, and the channel adapters' webhooks.
 */
import type { HttpRoute } from "../../../channels/types.ts";
import { newId } from "../../util/ids.ts";
import type { Logger } from "../../util/log.ts";
import { KeyedRateLimiter } from "../../util/rate-limit.ts";
import { isServerBodyLimitError } from "../../util/read-body.ts";
import { authenticateOperator, type OperatorCredentials, operatorApiEnabled } from "./auth.ts";
import { PayloadTooLargeError } from "./body.ts";
import { asErrorPage, wantsHtmlPage } from "./error-page.ts";
import { eventRoutes } from "./event-routes.ts";
import { healthRoutes } from "./health-routes.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { apiError, errorToResponse } from "./respond.ts";
import { type Route, Router } from "./router.ts";
import { loadAssets, staticRoutes } from "./static-routes.ts";
import type { HttpServices } from "./types.ts";
import { checkWebRequest, isWebChatPath, type WebAccessPolicy, webAccessPolicy } from "./web-guard.ts";

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
  const credentials: OperatorCredentials = {
    shared: services.operatorToken,
    named: services.operatorTokens ?? [],
  };
  const router = new Router([
    ...healthRoutes(services),
    ...staticRoutes(await loadAssets(), operatorApiEnabled(credentials)),
    ...operatorRoutes({
      operator: services.operator,
      maxBodyBytes,
      onOperatorAction: () => {
        services.onOperatorAction?.();
        services.changes?.publish({ kind: "operator" });
      },
      dashboard: services.dashboard,
    }),
    ...eventRoutes({
      services,
      heartbeatMs: options.sseHeartbeatMs ?? 15_000,
      logger,
      track: (abort) => {
        openStreams.add(abort);
        return () => openStreams.delete(abort);
      },
    }),
    // The web channel's routes may also come in `routes` (it is one of the adapters): mount once.
    ...[...new Set([...services.web.routes(), ...services.routes])].map(mountAdapterRoute),
  ]);

  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    maxRequestBodySize: options.maxRequestBodyBytes ?? 1024 * 1024,
    fetch: async function handleRequest(request, bunServer): Promise<Response> {
      const startedMs = performance.now();
      const requestId = newId("req");
      const url = new URL(request.url);
      // Event streams stay open for as long as the client wants; heartbeats keep them busy.
      if (request.headers.get("accept")?.includes("text/event-stream")) bunServer.timeout(request, 0);
      const clientAddress = bunServer.requestIP(request)?.address ?? "unknown";
      let response = await route(request, url, requestId, clientAddress);
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
      if (refused) return refused;
      if (url.pathname.startsWith("/web/api/")) {
        const decision = webRequestsPerIp.take(clientAddress, Date.now());
        if (!decision.allowed) return tooManyRequests(decision.retryAfterMs, "from this address");
      }
    }
    const match = router.match(request.method, url.pathname);
    const isApiPath = url.pathname === "/api" || url.pathname.startsWith("/api/");
    // Without the token the API answers nothing, not even "no such route".
    const needsToken = match.kind === "found" ? match.route.access === "operator" : isApiPath;
    let operator: string | null = null;
    if (needsToken) {
      const auth = authenticateOperator(request, credentials);
      if ("refused" in auth) return auth.refused;
      operator = auth.name;
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
        ...(operator === null ? {} : { operator }),
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

function mountAdapterRoute(route: HttpRoute): Route {
  return {
    method: route.method,
    pattern: route.path,
    access: "public",
    handle: ({ request }) => route.handle(request),
  };
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
