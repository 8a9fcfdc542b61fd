import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import { createScheduleTools } from "../../schedules/tools.ts";
import { SwitchboardError } from "../errors.ts";
import { createModelRegistry } from "../models/registry.ts";
import { toUsage } from "../models/usage.ts";
import { modelSummarizer } from "../runtime/compaction.ts";
import { Runtime } from "../runtime/runtime.ts";
import type { ExternalCommitWatch, StoreBackend } from "../store/backend.ts";
import { McpTools } from "../tools/mcp/tools.ts";
import { createWebFetchTool, WEB_FETCH } from "../tools/web/tool.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import type { Logger } from "../util/log.ts";
import { ChannelStarter } from "./channel-starter.ts";
import { buildChannels } from "./channels.ts";
import { createChatCommands } from "./commands.ts";
import { type GatewayConfig, pickableModels, surfacePolicy } from "./config.ts";
import { type RunContext, readRunContext } from "./context.ts";
import { answerDeliveryFor, wireDelivery } from "./delivery.ts";
import type { ReadinessCheck } from "./http/types.ts";
import { createIngress } from "./ingress.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { createModelChoices, type ModelChoices } from "./model-choice.ts";
import { databaseReadiness } from "./readiness.ts";
import { createReplyTimeline } from "./reply-timeline.ts";

export interface GatewayDeps {
  /** The opened database (`openStoreBackend`); the gateway closes it when it stops. */
  stores: StoreBackend;
  clock?: Clock;
  logger: Logger;
  /** Extra adapters (the web channel; tests). Keyed by channel, replacing configured ones. */
  extraAdapters?: ChannelAdapter[];
}

export interface Gateway {
  readonly config: GatewayConfig;
  readonly stores: StoreBackend;
  readonly runtime: Runtime;
  readonly worker: DeliveryWorker;
  readonly schedules: ScheduleService;
  readonly adapters: ReadonlyMap<ChannelName, ChannelAdapter>;
  readonly metrics: Metrics;
  readonly ingress: ReturnType<typeof createIngress>;
  readonly mcp: McpTools;
  /** The models users pick with /model, for the operator service. */
  readonly models: ModelChoices;
  /** Recovers, then starts delivery, channels and schedules. */
  start(): Promise<void>;
  /** Stops ingress first, lets runs finish within the grace period, drains the outbox. */
  stop(options?: { graceMs?: number }): Promise<ShutdownReport>;
  readiness(): Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> }>;
  renderMetrics(): Promise<string>;
}

export interface ShutdownReport {
  runsSettled: boolean;
  runsRemaining: number;
  outboxDrained: boolean;
  waitingReplies: number;
}

/** Composes the product: store, runtime, outbox worker, schedules and channels, in one process. */
export function createGateway(config: GatewayConfig, deps: GatewayDeps): Gateway {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  const owner = newId("gw");
  const { stores } = deps;
  const metrics = createMetrics();
  const timeline = createReplyTimeline((stage, ms) => metrics.replyStage(stage, ms));
  const registry = createModelRegistry(config.modelEnv, { named: pickableModels(config.file) });
  const models = createModelChoices({ registry, file: config.file, store: stores.runtime, clock });
  const { adapters, allowLists } = buildChannels(config, { clock, logger });
  for (const extra of deps.extraAdapters ?? []) adapters.set(extra.channel, extra);

  let schedules: ScheduleService | null = null;
  const mcp = new McpTools({
    servers: config.file.mcpServers,
    env: config.mcpEnv,
    logger: logger.child({ component: "mcp" }),
    reserved: new Set([...SCHEDULE_TOOL_NAMES, WEB_FETCH]),
  });
  const runtime = new Runtime({
    store: stores.runtime,
    models: registry.chain,
    // Only with pickable models: otherwise every run uses the chain and reads nothing more.
    ...(models.names.length > 0 ? { modelsFor: models.forRun } : {}),
    readUsage: toUsage,
    clock,
    logger: logger.child({ component: "runtime" }),
    owner,
    answerDelivery: answerDeliveryFor,
    modelCalls: timeline.modelCalls,
    // Summaries from the offline model would be noise; any real model folds long conversations.
    ...(registry.chain[0].spec === "offline"
      ? {}
      : {
          history: {
            compaction: { afterTurns: 60, keepTurns: 30, summarize: modelSummarizer(registry.chain[0]) },
          },
        }),
    instructions: ({ context, nowMs }) => instructionsFor(config, readRunContext(context), nowMs),
    // schedule_list and web_fetch only read; the MCP tools a server's config lists as idempotent.
    idempotent: (name) => name === "schedule_list" || name === WEB_FETCH || mcp.isIdempotent(name),
    tools: (ctx) => {
      const context = readRunContext(ctx.context);
      if (!schedules || !context) return {};
      return {
        ...mcp.toolSet().tools,
        ...(config.webFetch.enabled
          ? createWebFetchTool({ allowPrivate: config.webFetch.allowPrivate })
          : {}),
        ...createScheduleTools({
          service: schedules,
          conversation: {
            conversationId: ctx.conversationId,
            replyTarget: context.target,
            channel: context.channel,
          },
          fence: ctx.assertOwned,
          timezone: config.timezone,
        }),
      };
    },
  });

  const worker = createDeliveryWorker({
    repo: stores.outbox,
    adapters,
    clock,
    ambiguousHoldMs: config.ambiguousHoldMs,
    observer: { rateLimited: (channel) => metrics.outboxRateLimited(channel), ...timeline.delivery },
    logger,
  });

  schedules = createScheduleService({
    repository: stores.schedules,
    clock,
    owner,
    onEvent: (event) => {
      if (event.type === "dispatched") metrics.scheduleLateness(event.lateByMs);
      logger.debug(`schedule.${event.type}`, { ...event });
    },
    dispatch: async (request) => {
      const adapter = adapters.get(request.schedule.channel);
      if (!adapter)
        return { status: "retry", reason: `channel ${request.schedule.channel} is not configured` };
      const context: RunContext = {
        channel: request.schedule.channel,
        account: adapter.account,
        target: request.schedule.replyTarget,
        surface: "dm",
        delivery: "terminal",
        conversationKey: `schedule:${request.schedule.id}`,
        principal: { id: `schedule:${request.schedule.id}` },
        origin: "schedule",
      };
      const admission = await runtime.submit({
        conversationId: request.schedule.conversationId,
        idempotencyKey: request.idempotencyKey,
        parts: [
          { type: "text", text: `[Scheduled prompt ${request.schedule.id}] ${request.schedule.prompt}` },
        ],
        context,
        policy: "queue",
      }).admission;
      return { status: "ok", runId: admission.runId };
    },
  });

  const commands = createChatCommands({
    runtime,
    store: stores.runtime,
    outbox: stores.outbox,
    schedules,
    defaultTimezone: config.timezone,
    clock,
    notify: () => worker.notify(),
    models,
  });
  const ingress = createIngress({
    runtime,
    store: stores.runtime,
    file: config.file,
    allowLists,
    commands,
    metrics,
    timeline,
    clock,
    logger: logger.child({ component: "ingress" }),
  });

  let unwire: (() => void) | null = null;
  let externalCommits: ExternalCommitWatch | null = null;
  // Closed first on shutdown: updates are then refused (not acknowledged, so platforms redeliver
  // them later) while the adapters stay up to deliver the answers still being written.
  let accepting = true;
  const guardedIngress: typeof ingress = (message) =>
    accepting
      ? ingress(message)
      : Promise.reject(
          new SwitchboardError(
            "runtime_closed",
            "The gateway is shutting down; deliver this update again later.",
          ),
        );
  runtime.subscribe((event) => {
    if (event.type === "checkpoint") metrics.stepLatency(event.durationMs);
    else if (event.type === "terminal") timeline.terminalCommitted(event.runId);
  });
  const channels = new ChannelStarter(
    adapters,
    async (name, adapter) => {
      await adapter.start(guardedIngress, {
        sessionRenewed: () => void catchUpChannel(name, adapter, stores, logger),
      });
      logger.info("channel.started", { channel: name, account: adapter.account });
      await catchUpChannel(name, adapter, stores, logger);
    },
    logger,
  );

  return {
    config,
    stores,
    runtime,
    worker,
    schedules,
    adapters,
    metrics,
    ingress,
    mcp,
    models,
    async start() {
      // Before recovery: a resumed run may call these tools. A server that fails stays down and
      // retries; only colliding tool names (a configuration error) stop the start.
      await mcp.start();
      const recovered = await worker.start();
      if (recovered.ambiguous.length > 0) {
        logger.warn("outbox.ambiguous_after_restart", {
          records: recovered.ambiguous,
          hint: "check the chat, then `switchboard outbox resolve ID --delivered|--failed`",
        });
      }
      unwire = wireDelivery({ runtime, store: stores.runtime, worker, adapters, clock, logger });
      await runtime.recover({ takeOverLeases: true });
      await channels.startAll();
      // One gateway per SQLite file: a claim left by a dead process fires now, not when its lease ends.
      await schedules.start({ takeOverLeases: true });
      // Without this an operator's `outbox retry` or `schedules resume` on the file waits for an
      // unrelated wake-up (a new message, a timer) before the running gateway acts on it.
      externalCommits = stores.watchExternalCommits(
        () => {
          worker.notify();
          void schedules.tick();
        },
        (error) => logger.warn("store.external_commit_check_failed", { error }),
      );
    },
    async stop(options = {}) {
      const graceMs = options.graceMs ?? config.shutdownGraceMs;
      accepting = false;
      channels.stop();
      externalCommits?.stop();
      await schedules.stop();
      const closed = await runtime.close({ gracePeriodMs: graceMs, forceTimeoutMs: 3000 });
      await mcp.stop();
      const outboxDrained = await worker.drain(Math.max(1000, Math.min(5000, graceMs)));
      for (const [name, adapter] of adapters) {
        await adapter.stop().catch((error) => logger.warn("channel.stop_failed", { channel: name, error }));
      }
      worker.stop();
      unwire?.();
      const counts = (await stores.gauges()).outbox;
      const waitingReplies = (counts.pending ?? 0) + (counts.sending ?? 0);
      await stores.close();
      return { runsSettled: closed.settled, runsRemaining: closed.remaining, outboxDrained, waitingReplies };
    },
    async readiness() {
      const checks: Record<string, ReadinessCheck> = {
        database: await databaseReadiness(stores),
      };
      for (const [name, adapter] of adapters) checks[`channel:${name}`] = channels.check(name, adapter);
      // A failed MCP server only takes its own tools away: degraded, still ready.
      for (const server of mcp.statuses()) {
        checks[`mcp:${server.name}`] =
          server.state === "up"
            ? { ok: true }
            : { ok: false, degraded: true, detail: server.error ?? server.state };
      }
      return { ready: Object.values(checks).every((c) => c.ok || c.degraded), checks };
    },
    async renderMetrics() {
      return metrics.render(await stores.gauges(), {
        lanes: runtime.lanesHeld,
        nowMs: clock.now(),
        active: true,
        mcpServers: mcp.statuses().map((s) => ({ name: s.name, up: s.state === "up" })),
      });
    },
  };
}

/** The gateway's own tool names, which no MCP tool may take. */
const SCHEDULE_TOOL_NAMES = [
  "schedule_after",
  "schedule_at",
  "schedule_every",
  "schedule_list",
  "schedule_cancel",
];

/** Most recently active targets a catch-up looks at; adapters bound it further. */
const CATCH_UP_MAX_TARGETS = 200;

/**
 * For a platform that never redelivers what it sent while we were down: hands the adapter, per
 * target, the last message ingress recorded there. Ingress dedupe makes repeats harmless.
 */
async function catchUpChannel(
  name: ChannelName,
  adapter: ChannelAdapter,
  stores: StoreBackend,
  logger: Logger,
): Promise<void> {
  if (!adapter.catchUp) return;
  const source = `${adapter.channel}:${adapter.account}`;
  try {
    const latest = await stores.runtime.latestIngressPerTarget(source, CATCH_UP_MAX_TARGETS);
    const report = await adapter.catchUp(
      latest.map((row) => ({ target: row.replyTarget, afterMessageId: row.updateKey })),
    );
    logger.info("channel.catch_up", { channel: name, ...report });
  } catch (error) {
    // Catch-up only narrows a gap the platform leaves; the channel itself is up and serving.
    logger.warn("channel.catch_up_failed", { channel: name, error });
  }
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** Creating an Intl formatter is costly; one per zone is reused for every step. */
function localTimeFormat(timeZone: string): Intl.DateTimeFormat {
  let format = timeFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "full", timeStyle: "long" });
    timeFormats.set(timeZone, format);
  }
  return format;
}

/** The system prompt: configured instructions, the surface's additions, and where and when we are. */
export function instructionsFor(config: GatewayConfig, context: RunContext | null, nowMs: number): string {
  const parts = [config.instructions];
  if (context) {
    const policy = surfacePolicy(config.file, context.channel, context.surface);
    if (policy.instructions) parts.push(policy.instructions);
    const where =
      context.surface === "dm"
        ? "a direct conversation"
        : context.surface === "group"
          ? "a group chat"
          : "a thread";
    const who = context.principal.name ? ` with ${context.principal.name}` : "";
    parts.push(
      context.origin === "schedule"
        ? `This turn was started by a schedule the user created; answer the scheduled prompt directly. Channel: ${context.channel}.`
        : `You are talking on ${context.channel} in ${where}${who}.`,
    );
  }
  const now = new Date(nowMs);
  const local = localTimeFormat(config.timezone).format(now);
  parts.push(`Current time: ${local} (${config.timezone}; ${now.toISOString()}).`);
  return parts.join("\n\n");
}
