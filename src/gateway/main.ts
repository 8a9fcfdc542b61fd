import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { ChannelAdapter, ChannelName, HttpRoute } from "../../channels/types.ts";
import { createWebChannel } from "../../channels/web/index.ts";
import { isSwitchboardError } from "../errors.ts";
import { sniffMediaType } from "../media/sniff.ts";
import { createOperatorService } from "../operator/service.ts";
import { openStoreBackend } from "../store/open-backend.ts";
import { startTelemetry, type Telemetry } from "../telemetry/start.ts";
import { createLogger, type Logger } from "../util/log.ts";
import { gatewayClock } from "../util/test-clock.ts";
import { createGateway, type Gateway } from "./app.ts";
import { allowListVariable, CHANNEL_MODULES, PLATFORM_CHANNELS } from "./channels.ts";
import { type GatewayConfig, loadConfig, redactSecrets, webAccessFor } from "./config/index.ts";
import { conversationApiServices } from "./conversation-api-services.ts";
import { type HttpServer, startHttpServer } from "./http/server.ts";
import { conversationSettingsReader } from "./settings-view.ts";
import { combineSharedRoutes } from "./shared-routes.ts";
import { startStandbyHttp } from "./standby.ts";
import { explainStartFailure } from "./start-failure.ts";
import { webHistoryLoader } from "./web-history.ts";
import { prepareWebUserIds } from "./web-user-ids.ts";

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  /** Graceful shutdown; resolves with what remained. */
  shutdown(): Promise<void>;
}

/**
 * Starts everything: store, recovery, channels, outbox, schedules and the HTTP server. A standby
 * (`SWITCHBOARD_STANDBY=on`) first waits, serving health and the operator API, until the active
 * gateway on its database stops; aborting `standbySignal` ends that wait (the promise rejects).
 */
export async function startGateway(
  config: GatewayConfig,
  logger: Logger,
  standbySignal: AbortSignal = new AbortController().signal,
  telemetry: Telemetry | null = null,
): Promise<RunningGateway> {
  const missingDirectory = missingSqliteDirectory(config);
  const stores = await openStoreBackend(config.database);
  if (missingDirectory)
    logger.info("store.directory_created", {
      directory: missingDirectory,
      hint: "SWITCHBOARD_DB names a file in a directory that did not exist, so it was created",
    });
  // Set by the standby wait's callback (a plain `let` would stay `null` to the type checker).
  const standby: { http: HttpServer | null } = { http: null };
  try {
    await stores.becomeActiveGateway({
      onLost(error) {
        // Two gateways now share the database; stopping at once is what crash recovery is for.
        logger.error("gateway.exclusive_lock_lost", { error: error.message });
        process.exit(1);
      },
      ...(config.database.engine === "postgres" && config.database.standby
        ? {
            standby: {
              signal: standbySignal,
              async onWaiting() {
                standby.http = await startStandbyHttp(config, stores, logger);
                logger.info("gateway.standby", {
                  url: standby.http.url,
                  database: stores.location,
                  hint: "another gateway is active on this database; this one takes over when it stops",
                });
              },
            },
          }
        : {}),
    });
  } catch (error) {
    await standby.http?.stop();
    await stores.close();
    throw error;
  }
  if (standby.http) {
    await standby.http.stop();
    logger.info("gateway.taking_over", { database: stores.location });
  }
  const clock = gatewayClock(process.env);
  // Once active: the key is in the database, and old rows are rewritten before anything reads them.
  let webUserIdKey: string;
  try {
    webUserIdKey = await prepareWebUserIds(stores, clock.now(), logger);
  } catch (error) {
    await stores.close();
    throw error;
  }
  const web = config.web.enabled
    ? createWebChannel({
        messagesPerSessionPerMinute: config.web.messagesPerSessionPerMinute,
        // As many as the page replays (the web channel's default of 200 per session).
        history: webHistoryLoader(stores, 200),
        uploads: { blobs: stores.blobs, maxFileBytes: config.media.maxFileBytes, sniff: sniffMediaType },
        userIdKey: webUserIdKey,
      })
    : null;
  const gateway = createGateway(config, {
    stores,
    logger,
    clock,
    extraAdapters: web ? [web] : [],
    ...(telemetry ? { telemetry } : {}),
  });
  telemetry?.exportMetrics(() => gateway.renderMetrics());
  await gateway.start();
  const operator = createOperatorService({
    stores: gateway.stores,
    clock,
    onOutboxChanged: () => gateway.worker.notify(),
    onSchedulesChanged: () => void gateway.schedules.tick(),
    onApprovalDecided: () => void gateway.runtime.recover().catch(() => {}),
    modelNames: gateway.models.names,
    budgets: { budgets: config.file.budgets, timezone: config.timezone },
    stopRun: (conversationId, runId) =>
      gateway.runtime.interrupt({ conversationId, runId, reason: "superseded" }),
    blobs: gateway.blobJanitor,
  });
  const routes = [
    ...combineSharedRoutes(currentAdapterRoutes(gateway.adapters)),
    ...(gateway.slackWorkspaces?.routes() ?? []),
  ];
  const http = await startHttpServer({
    host: config.http.host,
    port: config.http.port,
    // A web chat upload may be as large as one file may be; every other route bounds its own body.
    ...(web ? { maxRequestBodyBytes: Math.max(1024 * 1024, config.media.maxFileBytes + 64 * 1024) } : {}),
    logger: logger.child({ component: "http" }),
    webAccess: webAccessFor(config),
    webRequestsPerIpPerMinute: config.web.requestsPerIpPerMinute,
    services: {
      operator,
      follow: (conversationId, afterSeq, signal) => gateway.runtime.follow(conversationId, afterSeq, signal),
      readiness: () => gateway.readiness(),
      metrics: () => gateway.renderMetrics(),
      dashboard: () => gateway.dashboard(),
      conversationSettings: conversationSettingsReader(config, operator.runs),
      changes: gateway.changes,
      routes,
      web: web ?? createWebChannel({}),
      operatorToken: config.operatorToken,
      operatorTokens: config.operatorTokens,
      appTokens: config.appTokens,
      openaiCompat: config.openaiCompat,
      metricsToken: config.metricsToken,
      conversations: conversationApiServices(gateway, clock),
    },
  });
  announce(config, gateway, http.url, logger);
  let stopping: Promise<void> | null = null;
  return {
    gateway,
    url: http.url,
    shutdown() {
      stopping ??= (async () => {
        logger.info("gateway.stopping", { graceMs: config.shutdownGraceMs });
        const report = await gateway.stop();
        await http.stop();
        await telemetry?.shutdown();
        logger.info("gateway.stopped", { ...report });
      })();
      return stopping;
    },
  };
}

/**
 * The adapters' webhook routes, each answered by the adapter the channel has now: a channel that
 * failed to start runs on a fresh adapter (see ChannelStarter), whose routes the old ones'd miss.
 */
function currentAdapterRoutes(adapters: ReadonlyMap<string, ChannelAdapter>): HttpRoute[] {
  const routesOf = new WeakMap<ChannelAdapter, HttpRoute[]>();
  const current = (slot: string, method: HttpRoute["method"], path: string) => {
    const adapter = adapters.get(slot);
    if (!adapter) return undefined;
    let routes = routesOf.get(adapter);
    if (!routes) {
      routes = adapter.routes?.() ?? [];
      routesOf.set(adapter, routes);
    }
    return routes.find((route) => route.method === method && route.path === path);
  };
  return [...adapters].flatMap(([slot, adapter]) =>
    (adapter.routes?.() ?? []).map(({ method, path, shared }) => ({
      method,
      path,
      ...(shared ? { shared } : {}),
      handle: async function currentAdapterRoute(request: Request) {
        const route = current(slot, method, path);
        if (!route)
          return new Response("This channel's route is gone; is the channel configured?", { status: 503 });
        return route.handle(request);
      },
    })),
  );
}

function announce(config: GatewayConfig, gateway: Gateway, url: string, logger: Logger): void {
  const channels = [...gateway.adapters.keys()];
  const configured = new Set([...gateway.adapters.values()].map((adapter) => adapter.channel));
  logger.info("gateway.started", {
    url,
    database: gateway.stores.location,
    channels,
    model: gateway.runtime.models.map((m) => m.label).join(" -> "),
  });
  if (config.web.enabled)
    logger.info("gateway.web_chat", {
      url: `${config.http.publicUrl ?? url}/`,
      hint: config.web.token
        ? "open this in a browser and enter SWITCHBOARD_WEB_TOKEN to talk to the agent"
        : "open this in a browser to talk to the agent",
    });
  else if (config.web.offReason) logger.warn("gateway.web_chat_off", { hint: config.web.offReason });
  if (!config.operatorToken && config.operatorTokens.length === 0) {
    logger.warn("gateway.operator_api_disabled", {
      hint: "set SWITCHBOARD_OPERATOR_TOKEN (16+ characters) to enable /api and the console at /console",
    });
  } else {
    logger.info("gateway.console", { url: `${url}/console` });
  }
  if (gateway.runtime.models[0]?.label.startsWith("offline")) {
    logger.warn("gateway.offline_model", {
      hint: "set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to connect a real model",
    });
  }
  for (const name of PLATFORM_CHANNELS) {
    if (!configured.has(name)) {
      logger.info("gateway.channel_not_configured", {
        channel: name,
        hint: `set ${CHANNEL_MODULES[name].howToConnect}`,
      });
      continue;
    }
    for (const account of config.accounts.filter((a) => a.channel === name))
      if (account.allowList.kind === "ids" && account.allowList.ids.size === 0 && !account.allowList.pairing)
        logger.warn("gateway.nobody_allowed", {
          channel: name,
          account: account.name,
          hint: `nobody may talk to this bot yet: set accounts.${name}.${account.name}.allowedUsers to user ids (or "*")`,
        });
    if (!channels.includes(name)) continue;
    const list = config.allowLists[name];
    // A channel that settles who may write itself (the api channel's tokens) has no allow list.
    if (gateway.adapters.get(name)?.admission?.ownAccessControl) continue;
    if (list?.kind === "ids" && list.pairing) {
      logger.info("gateway.pairing", {
        channel: name,
        hint: "a user off the allowlist who writes in a DM gets a pairing code; admit them with `npx switchboard access approve CODE`",
      });
    } else if (list?.kind === "ids" && list.ids.size === 0) {
      logger.warn("gateway.nobody_allowed", {
        channel: name,
        hint: `nobody may talk to the bot yet: set ${allowListVariable(name)} to user ids (or *); denied users' ids are logged`,
      });
    }
  }
}

/**
 * A stop signal within this long of the first is that one relayed again, not an operator asking
 * to skip the graceful shutdown.
 */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * `switchboard start`: reads the environment (Bun loads .env), starts the gateway and shuts it
 * down gracefully on SIGINT/SIGTERM; a second signal (a second or more after the first) exits at
 * once. Exit code 78 for bad config.
 */
export async function runGateway(env: Record<string, string | undefined>): Promise<void> {
  let config: GatewayConfig;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) {
      process.stderr.write(`switchboard: configuration error: ${redactSecrets(error.message, env)}\n`);
      process.exit(78);
    }
    throw error;
  }
  const terminal = process.stderr.isTTY === true;
  const logger = createLogger({
    level: config.logLevel,
    secrets: config.secrets,
    format: config.logFormat ?? (terminal ? "pretty" : "json"),
    color: terminal && !process.env.NO_COLOR,
  });
  let telemetry: Telemetry | null;
  try {
    telemetry = await startTelemetry(env, { secrets: config.secrets, logger });
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) {
      process.stderr.write(`switchboard: configuration error: ${redactSecrets(error.message, env)}\n`);
      process.exit(78);
    }
    throw error;
  }
  // Signals can come while a standby waits, before there is a gateway to shut down.
  const standbyWait = new AbortController();
  let running: RunningGateway | null = null;
  let first: { signal: string; atMs: number } | null = null;
  const onSignal = (signal: string) => {
    if (first) {
      // The same stop relayed twice (npm forwards the terminal's Ctrl-C the terminal also sent;
      // a supervisor signals the whole group and npm forwards it too; bin/switchboard stops us
      // when npx's shell died of the signal) is one request.
      if (performance.now() - first.atMs < DUPLICATE_SIGNAL_MS) return;
      logger.warn("gateway.forced_exit", { signal });
      process.exit(130);
    }
    first = { signal, atMs: performance.now() };
    if (running) shutDown(running);
    else standbyWait.abort();
  };
  const shutDown = (gateway: RunningGateway) =>
    void gateway.shutdown().then(
      () => process.exit(0),
      (error) => {
        logger.error("gateway.shutdown_failed", { error });
        process.exit(1);
      },
    );
  // Reloads instructions, skills and resources; runs in flight keep the version they were admitted with.
  process.on("SIGHUP", () => {
    if (running) running.gateway.agents.reload("SIGHUP", true);
  });
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  try {
    running = await startGateway(config, logger, standbyWait.signal, telemetry);
  } catch (error) {
    if (standbyWait.signal.aborted) {
      logger.info("gateway.stopped", { role: "standby" });
      process.exit(0);
    }
    const explained = isSwitchboardError(error, "config_invalid")
      ? error
      : explainStartFailure(error, config);
    if (explained) {
      process.stderr.write(`switchboard: configuration error: ${redactSecrets(explained.message, env)}\n`);
      process.exit(78);
    }
    logger.error("gateway.start_failed", { error });
    process.exit(1);
  }
  // A signal came during start-up, when no standby wait was there to end it: shut down now.
  if (standbyWait.signal.aborted) shutDown(running);
}

/** The directory of the SQLite file when it does not exist yet (opening the database creates it). */
function missingSqliteDirectory(config: GatewayConfig): string | null {
  if (config.database.engine !== "sqlite") return null;
  const directory = dirname(resolve(config.database.path));
  return existsSync(directory) ? null : directory;
}
