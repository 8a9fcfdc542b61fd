import { randomBytes } from "node:crypto";
import type { ToolSet } from "ai";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { mediaRefusal } from "../../outbox/media.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import { createScheduleTools } from "../../schedules/tools.ts";
import { AgentDirectories } from "../agent/directories.ts";
import type { AgentFiles } from "../agent/files.ts";
import { agentFilesSummary } from "../agent/prompt.ts";
import { AGENT_FILE_TOOL_NAMES, createAgentFileTools } from "../agent/tools.ts";
import { type ApprovalService, createApprovalService } from "../approvals/service.ts";
import { costOnlyBudgetProblem } from "../budgets/config.ts";
import { createBudgetGuard } from "../budgets/guard.ts";
import { budgetWindows } from "../budgets/rules.ts";
import type { BudgetStore } from "../budgets/store.ts";
import { SwitchboardError } from "../errors.ts";
import { createMediaInputs, DEFAULT_MEDIA_LIMITS } from "../media/inputs.ts";
import { createModelRegistry } from "../models/registry.ts";
import { openAiCompatibleTranscriptionModel, transcribeAudio } from "../models/transcription.ts";
import { toUsage } from "../models/usage.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import { BlobJanitor } from "../runtime/blob-cleanup.ts";
import { modelSummarizer } from "../runtime/compaction.ts";
import { defaultModelInputs, type MediaInputs } from "../runtime/media.ts";
import { Runtime } from "../runtime/runtime.ts";
import { historyScopeOf } from "../search/scope.ts";
import { createHistoryTools, HISTORY_TOOL_NAMES } from "../search/tools.ts";
import { stateBlock } from "../state/slots.ts";
import { createStateTools, STATE_TOOL_NAMES } from "../state/tools.ts";
import type { ExternalCommitWatch, StoreBackend } from "../store/backend.ts";
import { createFileTools, SEND_FILE, type SendFileToolOptions } from "../tools/files/send-file.ts";
import { deliverToolImages } from "../tools/files/tool-images.ts";
import { McpTools } from "../tools/mcp/tools.ts";
import { createWebFetchTool, createWebSearchTool, WEB_FETCH, WEB_SEARCH } from "../tools/web/tool.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import type { Logger } from "../util/log.ts";
import { ChangeFeed } from "./change-feed.ts";
import { ChannelStarter } from "./channel-starter.ts";
import { buildChannels } from "./channels.ts";
import { createChatCommands } from "./commands.ts";
import { agentDirsOf, type GatewayConfig, pickableModels, surfacePolicy } from "./config.ts";
import { type Dashboard, readDashboard } from "./dashboard.ts";
import { answerDeliveryFor, wireDelivery } from "./delivery.ts";
import { createIngress } from "./ingress.ts";
import { createMetrics, type Metrics, type ProcessGauges } from "./metrics.ts";
import { createModelChoices, type ModelChoices } from "./model-choice.ts";
import { announcingOutcomes } from "./outbox-changes.ts";
import { databaseReadiness, type ReadinessCheck } from "./readiness.ts";
import { createReplyTimeline } from "./reply-timeline.ts";
import { pickToolSets } from "./tool-sets.ts";

export interface GatewayDeps {
  /** The opened database (`openStoreBackend`); the gateway closes it when it stops. */
  stores: StoreBackend;
  clock?: Clock;
  logger: Logger;
  /** Extra adapters (the web channel; tests). Keyed by channel, replacing configured ones. */
  extraAdapters?: ChannelAdapter[];
  /** How often agent directories are checked for changed files (ms); 0: only on SIGHUP. */
  agentPollMs?: number;
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
  /** The agent directories (instructions, skills, resources); `reload` on SIGHUP. */
  readonly agents: AgentDirectories;
  /** The models users pick with /model, for the operator service. */
  readonly models: ModelChoices;
  /** Removes files nothing needs (after /new, /forget, at start and hourly); for the operator service. */
  readonly blobJanitor: BlobJanitor;
  /** Recovers, then starts delivery, channels and schedules. */
  start(): Promise<void>;
  /** Stops ingress first, lets runs finish within the grace period, drains the outbox. */
  stop(options?: { graceMs?: number }): Promise<ShutdownReport>;
  readiness(): Promise<{ ready: boolean; checks: Record<string, ReadinessCheck> }>;
  renderMetrics(): Promise<string>;
  /** Runs and replies moving, for the console's live lists. */
  readonly changes: ChangeFeed;
  /** The console's dashboard, from the store's gauges, the latency histograms and readiness. */
  dashboard(): Promise<Dashboard>;
}

export interface ShutdownReport {
  runsSettled: boolean;
  runsRemaining: number;
  outboxDrained: boolean;
  waitingReplies: number;
}

/** How often unreferenced files and (with SWITCHBOARD_BLOB_RETENTION_DAYS) old ones are removed. */
const BLOB_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** Composes the product: store, runtime, outbox worker, schedules and channels, in one process. */
export function createGateway(config: GatewayConfig, deps: GatewayDeps): Gateway {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  const owner = newId("gw");
  const { stores } = deps;
  const metrics = createMetrics();
  const timeline = createReplyTimeline((stage, ms) => metrics.replyStage(stage, ms));
  const changes = new ChangeFeed();
  const registry = createModelRegistry(config.modelEnv, { named: pickableModels(config.file) });
  const models = createModelChoices({ registry, file: config.file, store: stores.runtime, clock });
  const costProblem = costOnlyBudgetProblem(config.file.budgets, [
    ...registry.chain.map((m) => m.spec),
    ...[...registry.named.values()].map((m) => m.spec),
  ]);
  if (costProblem) {
    throw new SwitchboardError("config_invalid", `SWITCHBOARD_CONFIG: ${costProblem}`, {
      details: { key: "budgets" },
    });
  }
  const budgets = createBudgetGuard({
    budgets: config.file.budgets,
    defaultTimezone: config.timezone,
    store: stores.budgets,
    clock,
    webToken: config.web.enabled ? config.web.token : null,
  });
  const { adapters, factories, allowLists } = buildChannels(config, { clock, logger });
  for (const extra of deps.extraAdapters ?? []) {
    adapters.set(extra.channel, extra);
    factories.delete(extra.channel);
  }

  let schedules: ScheduleService | null = null;
  const agents = new AgentDirectories(agentDirsOf(config), {
    logger: logger.child({ component: "agent" }),
    ...(deps.agentPollMs === undefined ? {} : { pollMs: deps.agentPollMs }),
  });
  /** The generation new runs on a surface with `agentDir` (undefined: the default) are pinned to. */
  const agentFor = (agentDir: string | undefined): RunContext["agent"] => {
    const files = agents.current(agentDir ?? config.agentDir);
    return files.exists ? { dir: files.root, version: files.version } : undefined;
  };
  /** The generation a run uses: the one it was pinned to at admission, else its surface's current one. */
  const agentFilesOf = (context: RunContext | null, runId?: string): AgentFiles => {
    if (context?.agent && agents.roots.includes(context.agent.dir))
      return agents.pinned(context.agent.dir, context.agent.version, runId);
    const dir = context ? surfacePolicy(config.file, context.channel, context.surface).agentDir : undefined;
    return agents.current(dir ?? config.agentDir);
  };
  /** history_search and history_read, scoped by the surface's historyScope (the run's user by default). */
  const historyTools = (conversationId: string, runId: string, context: RunContext) => {
    const { historyScope } = surfacePolicy(config.file, context.channel, context.surface);
    const scope = historyScopeOf(historyScope, conversationId, {
      channel: context.channel,
      principalId: context.principal.id,
      conversationKey: context.conversationKey,
      ...(context.roomKey === undefined ? {} : { roomKey: context.roomKey }),
    });
    if (scope === null) return {};
    return createHistoryTools({ search: stores.search, conversationId, runId, scope });
  };
  // SWITCHBOARD_APPROVAL_SECRET, or the key generated once and kept in the database (read at start).
  let approvalSecret = config.approvalSecret;
  const secret = () => {
    if (approvalSecret === null)
      throw new Error("the approval key is read at start(); nothing may sign before");
    return approvalSecret;
  };
  let approvals: ApprovalService | null = null;
  const mcp = new McpTools({
    servers: config.file.mcpServers,
    env: config.mcpEnv,
    logger: logger.child({ component: "mcp" }),
    reserved: new Set([...BUILT_IN_TOOLS, "read_output", "tool_search"]),
  });
  const media = gatewayMedia(config, {
    stores,
    adapters,
    clock,
    logger,
    primarySpec: registry.chain[0].spec,
  });
  const runtime = new Runtime({
    store: stores.runtime,
    media,
    models: registry.chain,
    // Only with pickable models: otherwise every run uses the chain and reads nothing more.
    ...(models.names.length > 0 ? { modelsFor: models.forRun } : {}),
    readUsage: toUsage,
    clock,
    logger: logger.child({ component: "runtime" }),
    owner,
    answerDelivery: (run, state, text, requests) => {
      const delivery = answerDeliveryFor(run, state, text);
      if (!delivery || !requests || requests.length === 0 || !approvals) return delivery;
      return { ...delivery, prompts: approvals.prompts(requests) };
    },
    approvals: {
      required: (name) => mcp.requiresApproval(name),
      secret,
      timeoutMs: config.file.approvalTimeoutMs,
    },
    modelCalls: timeline.modelCalls,
    admissions: timeline.admissions,
    // Summaries from the offline model would be noise; any real model folds long conversations.
    ...(registry.chain[0].spec === "offline"
      ? {}
      : {
          history: {
            compaction: { afterTurns: 60, keepTurns: 30, summarize: modelSummarizer(registry.chain[0]) },
          },
        }),
    instructions: async ({ conversationId, context, nowMs }) => {
      const run = readRunContext(context);
      const state = stateBlock(await stores.state.loadState(conversationId));
      const instructions = instructionsFor(config, run, nowMs, agentFilesOf(run));
      return state ? `${instructions}\n\n${state}` : instructions;
    },
    // schedule_list, web_fetch, web_search and the agent file tools only read; the state tools
    // save a whole value (run again, they leave the same state; a stale expectedVersion is
    // refused); the MCP tools a server's config lists as idempotent.
    idempotent: (name) =>
      name === "schedule_list" ||
      // Enqueued under a key per tool call: run again, it adds nothing.
      name === SEND_FILE ||
      name === WEB_FETCH ||
      name === WEB_SEARCH ||
      (AGENT_FILE_TOOL_NAMES as readonly string[]).includes(name) ||
      (STATE_TOOL_NAMES as readonly string[]).includes(name) ||
      (HISTORY_TOOL_NAMES as readonly string[]).includes(name) ||
      mcp.isIdempotent(name),
    // The gateway's own tools stay offered when a large MCP catalog is deferred to tool_search.
    toolCatalog: {
      budgetBytes: config.file.toolCatalog.budgetBytes,
      pinned: (name) => BUILT_IN_TOOLS.has(name) || config.file.toolCatalog.pinned.includes(name),
    },
    tools: (ctx) => {
      const context = readRunContext(ctx.context);
      if (!schedules || !context) return {};
      const files = agentFilesOf(context, ctx.runId);
      logger.debug("run.agent_files", { runId: ctx.runId, root: files.root, version: files.version });
      const sets = new Map<string, ToolSet>();
      const outgoing: SendFileToolOptions = {
        runId: ctx.runId,
        destination: {
          channel: context.channel,
          account: context.account,
          target: context.target,
          ...(context.replyTo === undefined ? {} : { replyTo: context.replyTo }),
        },
        blobs: stores.blobs,
        maxFileBytes: config.media.maxFileBytes,
        fetch: config.webFetch.enabled
          ? {
              allowPrivate: config.webFetch.allowPrivate,
              timeoutMs: FILE_DOWNLOAD_TIMEOUT_MS,
              maxRedirects: 5,
            }
          : null,
        listMessages: (page) => stores.runtime.listMessages(ctx.conversationId, page),
        refusal: (file) => {
          const adapter = adapters.get(context.channel);
          return mediaRefusal(file, context.channel, adapter?.sendFile ? adapter.fileLimits : undefined);
        },
        enqueue: async (files) => {
          const ids = await ctx.enqueueFiles(files);
          worker.notify();
          return ids;
        },
      };
      const { tools: mcpTools, info } = mcp.toolSet((images, toolCallId, toolName) =>
        deliverToolImages(outgoing, images, toolCallId, toolName),
      );
      for (const [name, definition] of Object.entries(mcpTools)) {
        const server = info.get(name)?.server ?? "";
        sets.set(server, { ...sets.get(server), [name]: definition });
      }
      sets.set("agent", createAgentFileTools(files));
      sets.set("history", historyTools(ctx.conversationId, ctx.runId, context));
      sets.set("files", createFileTools(outgoing));
      sets.set(
        "state",
        createStateTools({
          store: stores.state,
          conversationId: ctx.conversationId,
          runId: ctx.runId,
          fence: ctx.assertOwned,
          now: () => clock.now(),
        }),
      );
      sets.set("web", {
        ...(sets.get("web") ?? {}),
        ...(config.webFetch.enabled
          ? createWebFetchTool({ allowPrivate: config.webFetch.allowPrivate })
          : {}),
        ...(config.webSearch ? createWebSearchTool(config.webSearch) : {}),
      });
      sets.set(
        "schedules",
        createScheduleTools({
          service: schedules,
          conversation: {
            conversationId: ctx.conversationId,
            chatKey: context.conversationKey,
            replyTarget: context.target,
            channel: context.channel,
          },
          fence: ctx.assertOwned,
          timezone: config.timezone,
        }),
      );
      return pickToolSets(sets, surfacePolicy(config.file, context.channel, context.surface).tools);
    },
  });

  const worker = createDeliveryWorker({
    repo: announcingOutcomes(stores.outbox, (change) => changes.publish(change)),
    adapters,
    clock,
    ambiguousHoldMs: config.ambiguousHoldMs,
    blobs: stores.blobs,
    observer: {
      rateLimited: (channel) => metrics.outboxRateLimited(channel),
      ...timeline.delivery,
      firstSendAnswered: (record) => {
        timeline.delivery.firstSendAnswered(record);
        changes.publish({ kind: "outbox", outboxId: record.id, conversationId: record.conversationId });
      },
    },
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
        conversationKey: request.schedule.chatKey ?? `schedule:${request.schedule.id}`,
        principal: { id: `schedule:${request.schedule.id}` },
        origin: "schedule",
      };
      // A chat's schedule runs in the chat's current conversation, so it follows /new. The ingress
      // identity dedupes a repeated dispatch even if /new moved the chat in between.
      const { chatKey } = request.schedule;
      const agent = agentFor(surfacePolicy(config.file, context.channel, context.surface).agentDir);
      if (agent) context.agent = agent;
      const admission = await runtime.submit({
        ...(chatKey === null
          ? { conversationId: request.schedule.conversationId }
          : { conversationKey: chatKey }),
        idempotencyKey: request.idempotencyKey,
        ingress: {
          source: "schedule",
          key: request.idempotencyKey,
          payload: { scheduleId: request.schedule.id },
        },
        parts: [
          { type: "text", text: `[Scheduled prompt ${request.schedule.id}] ${request.schedule.prompt}` },
        ],
        context,
        policy: "queue",
      }).admission;
      return { status: "ok", runId: admission.runId };
    },
  });

  approvals = createApprovalService({
    submit: (request) => runtime.submit(request).admission,
    store: stores.runtime,
    outbox: stores.outbox,
    approvers: (context) => surfacePolicy(config.file, context.channel, context.surface).approvers,
    secret,
    clock,
    logger: logger.child({ component: "approvals" }),
    notify: () => worker.notify(),
  });
  const blobJanitor = new BlobJanitor({
    blobs: stores.blobs,
    references: () => stores.blobReferences(),
    conversationBlobIds: (conversationId) => stores.conversationBlobIds(conversationId),
    now: () => clock.now(),
    logger: logger.child({ component: "blobs" }),
    retentionMs: config.media.blobRetentionMs,
  });
  let blobTimer: ReturnType<typeof setInterval> | null = null;
  const commands = createChatCommands({
    runtime,
    store: stores.runtime,
    state: stores.state,
    outbox: stores.outbox,
    schedules,
    defaultTimezone: config.timezone,
    clock,
    notify: () => worker.notify(),
    approvals,
    models,
    budgets,
    buttonSecret: secret,
    blobs: blobJanitor,
    files: {
      store: stores.blobs,
      limits: (channel) => {
        const adapter = adapters.get(channel);
        return adapter?.sendFile ? adapter.fileLimits : undefined;
      },
      exportTtlMs: config.media.exportTtlMs,
    },
  });
  const ingress = createIngress({
    runtime,
    store: stores.runtime,
    file: config.file,
    allowLists,
    access: stores.access,
    budgets,
    commands,
    approvals,
    metrics,
    timeline,
    clock,
    logger: logger.child({ component: "ingress" }),
    agentFor,
  });
  let expiryTimer: ReturnType<typeof setInterval> | null = null;

  let unwire: (() => void) | null = null;
  let externalCommits: ExternalCommitWatch | null = null;
  // Closed first on shutdown: updates are then refused (not acknowledged, so platforms redeliver
  // them later) while the adapters stay up to deliver the answers still being written.
  let accepting = true;
  const guardedIngress: typeof ingress = (message, timing) =>
    accepting
      ? ingress(message, timing)
      : Promise.reject(
          new SwitchboardError(
            "runtime_closed",
            "The gateway is shutting down; deliver this update again later.",
          ),
        );
  runtime.subscribe((event) => {
    if (event.type === "checkpoint") metrics.stepLatency(event.durationMs);
    else if (event.type === "terminal") timeline.terminalCommitted(event.runId);
    if (event.type === "admission" || event.type === "run-state" || event.type === "terminal")
      changes.publish({
        kind: "run",
        runId: event.runId,
        conversationId: event.conversationId,
        ...("state" in event ? { state: event.state } : {}),
      });
  });
  const channels = new ChannelStarter({
    adapters,
    factories,
    async startOne(name, adapter) {
      await adapter.start(guardedIngress, {
        sessionRenewed: () => void catchUpChannel(name, adapter, stores, logger),
      });
      logger.info("channel.started", { channel: name, account: adapter.account });
      await catchUpChannel(name, adapter, stores, logger);
    },
    logger,
    clock,
  });

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
    agents,
    models,
    blobJanitor,
    async start() {
      agents.start();
      approvalSecret ??= await stores.runtime.loadOrCreateSecret(
        "approval",
        randomBytes(32).toString("base64url"),
        clock.now(),
      );
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
      // Pending approvals past their expiry count as denied ("expired"); checked at start and then
      // a few times per timeout (at least every 30 s).
      const sweep = () =>
        void approvals?.expireDue().catch((error) => logger.warn("approval.sweep_failed", { error }));
      sweep();
      expiryTimer = setInterval(sweep, Math.max(1000, Math.min(30_000, config.file.approvalTimeoutMs / 4)));
      // Files of purges made while it was down (or by the CLI), and retention; then hourly.
      void blobJanitor.sweep();
      blobTimer = setInterval(() => void blobJanitor.sweep(), BLOB_SWEEP_INTERVAL_MS);
      // Without this an operator's `outbox retry` or `schedules resume` on the file waits for an
      // unrelated wake-up (a new message, a timer) before the running gateway acts on it.
      externalCommits = stores.watchExternalCommits(
        () => {
          worker.notify();
          void schedules.tick();
          // An operator's approval decision (CLI on the database) queued a successor run.
          void runtime.recover().catch((error) => logger.warn("runtime.wake_failed", { error }));
        },
        (error) => logger.warn("store.external_commit_check_failed", { error }),
      );
    },
    async stop(options = {}) {
      const graceMs = options.graceMs ?? config.shutdownGraceMs;
      accepting = false;
      agents.stop();
      if (expiryTimer) clearInterval(expiryTimer);
      if (blobTimer) clearInterval(blobTimer);
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
    changes,
    dashboard() {
      return readDashboard({
        nowMs: () => clock.now(),
        gauges: () => stores.gauges(),
        latency: () => metrics.latency(),
        readiness: () => this.readiness(),
        stepUsageSince: (sinceMs) => stores.operator.stepUsageSince(sinceMs),
      });
    },
    async renderMetrics() {
      return metrics.render(await stores.gauges(), {
        lanes: runtime.lanesHeld,
        nowMs: clock.now(),
        active: true,
        mcpServers: mcp.statuses().map((s) => ({ name: s.name, up: s.state === "up" })),
        usage: await usageGauges(stores.budgets, budgets.timezone, clock.now()),
      });
    },
  };
}

/** How many users and conversations /metrics lists usage for (the heaviest first). */
const METRICS_USAGE_ROWS = 50;

/** Usage today and this month (in the budgets' zone) per user and per conversation, for /metrics. */
async function usageGauges(
  store: BudgetStore,
  timezone: string,
  nowMs: number,
): Promise<NonNullable<ProcessGauges["usage"]>> {
  const windows = budgetWindows(nowMs, timezone);
  const [dayUsers, monthUsers, dayConversations, monthConversations] = await Promise.all([
    store.usageBy("user", windows.dayStartMs, METRICS_USAGE_ROWS),
    store.usageBy("user", windows.monthStartMs, METRICS_USAGE_ROWS),
    store.usageBy("conversation", windows.dayStartMs, METRICS_USAGE_ROWS),
    store.usageBy("conversation", windows.monthStartMs, METRICS_USAGE_ROWS),
  ]);
  return {
    user: { day: dayUsers, month: monthUsers },
    conversation: { day: dayConversations, month: monthConversations },
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

/** How long send_file may take to download a file from a URL. */
const FILE_DOWNLOAD_TIMEOUT_MS = 60_000;

const BUILT_IN_TOOLS: ReadonlySet<string> = new Set([
  ...SCHEDULE_TOOL_NAMES,
  SEND_FILE,
  WEB_FETCH,
  WEB_SEARCH,
  ...AGENT_FILE_TOOL_NAMES,
  ...STATE_TOOL_NAMES,
  ...HISTORY_TOOL_NAMES,
]);

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
    format = new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "full", timeStyle: "short" });
    timeFormats.set(timeZone, format);
  }
  return format;
}

/**
 * The system prompt: the instructions (SWITCHBOARD_INSTRUCTIONS or the config file, else the agent
 * directory's INSTRUCTIONS.md, else the default), the surface's additions, the skills and
 * resources summary, and where and when we are.
 */
export function instructionsFor(
  config: GatewayConfig,
  context: RunContext | null,
  nowMs: number,
  files?: AgentFiles,
): string {
  const parts = [
    config.instructionsSource === "default" && files?.instructions ? files.instructions : config.instructions,
  ];
  if (context) {
    const policy = surfacePolicy(config.file, context.channel, context.surface);
    if (policy.instructions) parts.push(policy.instructions);
  }
  const summary = files ? agentFilesSummary(files) : "";
  if (summary) parts.push(summary);
  if (context) {
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
  // To the minute: the system prompt then stays the same for every step of a run (and every
  // message) within a minute, so a provider's prompt cache can serve the tools, the instructions
  // and the history before it instead of reading them again.
  const minute = new Date(nowMs - (nowMs % 60_000));
  const local = localTimeFormat(config.timezone).format(minute);
  parts.push(`Current time: ${local} (${config.timezone}; ${minute.toISOString().slice(0, 16)}Z).`);
  return parts.join("\n\n");
}

/** The media pipeline: the channels' downloads into the blob store, scaled and transcribed for the model. */
function gatewayMedia(
  config: GatewayConfig,
  deps: {
    stores: StoreBackend;
    adapters: ReadonlyMap<string, ChannelAdapter>;
    clock: Clock;
    logger: Logger;
    primarySpec: string;
  },
): MediaInputs {
  const { stores, adapters, clock } = deps;
  const transcriptionSpec = config.media.transcriptionModel;
  const baseUrl = config.modelEnv.OPENAI_COMPATIBLE_BASE_URL;
  const transcriptionModel =
    transcriptionSpec && baseUrl
      ? openAiCompatibleTranscriptionModel({
          baseUrl,
          modelId: transcriptionSpec.slice("openai-compatible:".length),
          ...(config.modelEnv.OPENAI_COMPATIBLE_API_KEY
            ? { apiKey: config.modelEnv.OPENAI_COMPATIBLE_API_KEY }
            : {}),
        })
      : null;
  return createMediaInputs({
    blobs: stores.blobs,
    open: async (context, ref, signal) => {
      const run = readRunContext(context);
      const adapter = run ? adapters.get(run.channel) : undefined;
      if (!adapter?.openFile) {
        throw new SwitchboardError(
          "platform_rejected",
          `files sent through ${run?.channel ?? "this source"} cannot be fetched`,
        );
      }
      return await adapter.openFile(ref, signal);
    },
    accepts: config.media.modelInputs ?? defaultModelInputs(deps.primarySpec),
    limits: {
      ...DEFAULT_MEDIA_LIMITS,
      maxFileBytes: config.media.maxFileBytes,
      maxAudioSeconds: config.media.maxAudioSeconds,
    },
    logger: deps.logger.child({ component: "media" }),
    ...(transcriptionModel
      ? { transcribe: (audio, _type, signal) => transcribeAudio(transcriptionModel, audio, signal) }
      : {}),
    // One lane runs a conversation's runs one at a time, so this read-then-write does not race.
    conversationQuota: {
      limitBytes: config.media.maxConversationBytes,
      used: async (conversationId) =>
        (await stores.runtime.loadConversationSettings(conversationId)).mediaBytes ?? 0,
      add: async (conversationId, bytes) => {
        const used = (await stores.runtime.loadConversationSettings(conversationId)).mediaBytes ?? 0;
        await stores.runtime.saveConversationSettings(
          conversationId,
          { mediaBytes: used + bytes },
          clock.now(),
        );
      },
    },
    firstTranscriptionHint: async (conversationId) => {
      const settings = await stores.runtime.loadConversationSettings(conversationId);
      if (settings.transcriptionHinted) return false;
      await stores.runtime.saveConversationSettings(
        conversationId,
        { transcriptionHinted: true },
        clock.now(),
      );
      return true;
    },
  });
}
