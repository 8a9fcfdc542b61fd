import type { PlatformChannel } from "../../channels/module.ts";
import type { ChannelLimits } from "../../channels/types.ts";
import { createGateway, type Gateway } from "../../src/gateway/app.ts";
import { loadConfig } from "../../src/gateway/config/index.ts";
import { combineSharedRoutes } from "../../src/gateway/shared-routes.ts";
import { openStoreBackend } from "../../src/store/open-backend.ts";
import type { Clock } from "../../src/util/clock.ts";
import { type LogRecord, recordingLogger } from "./logger.ts";

/**
 * Channel limits that do not make a test wait for the platform's pacing: a chat's messages go
 * one after the other, and a streamed answer is edited every 50 ms.
 */
export const FAST_PACING: Partial<ChannelLimits> = { perChatIntervalMs: 0, editIntervalMs: 50 };

/** A gateway composed in this process; see startInProcessGateway. */
export interface InProcessGateway {
  readonly gateway: Gateway;
  /** What the gateway logged, parsed, in order. */
  readonly logs: LogRecord[];
  /**
   * With `serveRoutes`: the base URL of an HTTP server on 127.0.0.1 that answers the adapters'
   * routes (webhooks such as `/whatsapp/webhook`) and nothing else; null without it.
   */
  readonly url: string | null;
  /**
   * Stops it as SIGTERM would (ingress first, runs finish within `graceMs`, the outbox drains)
   * and closes its database. Idempotent.
   */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/**
 * `createGateway` on the configuration `env` describes, in this process: the store it names (a
 * temp SQLite file, as e2eGatewayEnv writes), the channels it configures (pointed at the
 * emulators), `clock` for its time and timers, and a recording logger. No HTTP server, no signal
 * handling and no web channel: for tests where a process is not the point. A SIGKILL, signals,
 * the CLI on the database, a standby and lazy SDK loading need `startGatewayProcess`.
 */
export async function startInProcessGateway(
  env: Record<string, string>,
  options: {
    clock: Clock;
    /**
     * Replaces these of every channel's limits, e.g. `{ perChatIntervalMs: 0, editIntervalMs: 50 }`
     * (see FAST_PACING) where the platform's pacing (a second between a chat's messages on
     * Telegram) is not what the test checks; the outbox tests and the emulators' flood limits
     * check the pacing itself.
     */
    limits?: Partial<ChannelLimits>;
    /**
     * Settings merged into a channel's, for those no variable sets, e.g.
     * `{ whatsapp: { pairIntervalMs: 1000 } }` with an emulator whose pair rate is as short.
     */
    channels?: Partial<Record<PlatformChannel, Record<string, unknown>>>;
    /** Serves the adapters' webhook routes over HTTP (see InProcessGateway.url). Default false. */
    serveRoutes?: boolean;
  },
): Promise<InProcessGateway> {
  const config = loadConfig(env);
  for (const [channel, settings] of Object.entries(options.channels ?? {})) {
    const name = channel as PlatformChannel;
    if (config.channels[name] === undefined)
      throw new Error(`options.channels sets ${name}, which env does not configure`);
    config.channels[name] = { ...(config.channels[name] as object), ...settings };
  }
  if (config.web.enabled) {
    throw new Error(
      "startInProcessGateway composes no web channel; set SWITCHBOARD_WEB=off (e2eGatewayEnv does) or start a process",
    );
  }
  const logger = recordingLogger({ secrets: config.secrets });
  const stores = await openStoreBackend(config.database);
  let gateway: Gateway;
  try {
    await stores.becomeActiveGateway({
      onLost(error) {
        logger.error("gateway.exclusive_lock_lost", { error: error.message });
      },
    });
    gateway = createGateway(config, { stores, logger, clock: options.clock });
    if (options.limits) {
      for (const adapter of gateway.adapters.values()) {
        // The outbox reads an adapter's limits at each call.
        Object.defineProperty(adapter, "limits", { value: { ...adapter.limits, ...options.limits } });
      }
    }
    await gateway.start();
  } catch (error) {
    await stores.close();
    throw error;
  }
  const server = options.serveRoutes ? serveAdapterRoutes(gateway) : null;
  let stopping: Promise<void> | null = null;
  return {
    gateway,
    logs: logger.records,
    url: server ? `http://127.0.0.1:${server.port}` : null,
    stop(stopOptions) {
      stopping ??= gateway.stop(stopOptions).then(() => server?.stop(true));
      return stopping;
    },
  };
}

/** An HTTP server answering each adapter's routes (as the gateway's own server does), 404 otherwise. */
function serveAdapterRoutes(gateway: Gateway): ReturnType<typeof Bun.serve> {
  const routes = combineSharedRoutes(
    [...gateway.adapters.values()].flatMap((adapter) => adapter.routes?.() ?? []),
  );
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      const route = routes.find((r) => r.method === request.method && r.path === path);
      return route ? route.handle(request) : new Response(`No adapter route ${path}`, { status: 404 });
    },
  });
}
