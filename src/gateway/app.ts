import type { PlatformChannel } from "../../channels/module.ts";
import type { SlackWorkspaces } from "../../channels/slack/workspaces.ts";
import type { ChannelAdapter } from "../../channels/types.ts";
import { adapterOfChannel } from "../../outbox/adapter-route.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import { principalKey } from "../access/principal.ts";
import { AgentDirectories } from "../agent/directories.ts";
import { createApprovalService } from "../approvals/service.ts";
import { costOnlyBudgetProblem } from "../budgets/config.ts";
import { createBudgetGuard } from "../budgets/guard.ts";
import { handedOverTo, spawnProgressLine, withDelegationLine } from "../children/progress.ts";
import { CHILD_STEP_CEILING, childPrompts } from "../children/runs.ts";
import { createChildAgents } from "../children/service.ts";
import { waitsForChild } from "../children/tools.ts";
import { SwitchboardError } from "../errors.ts";
import { createModelRegistry } from "../models/registry.ts";
import { toUsage } from "../models/usage.ts";
import { readRunContext } from "../run-context.ts";
import { BlobJanitor } from "../runtime/blob-cleanup.ts";
import { modelSummarizer } from "../runtime/compaction.ts";
import { Runtime } from "../runtime/runtime.ts";
import type { ExternalCommitWatch, StoreBackend } from "../store/backend.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import { McpTools } from "../tools/mcp/tools.ts";
import { type Clock, systemClock, type Timer } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import type { Logger } from "../util/log.ts";
import { agentFilesFor } from "./agent-files.ts";
import { agentTools, RESERVED_TOOL_NAMES } from "./agent-tools.ts";
import { approvalKey } from "./approval-key.ts";
import { accountNameOf, namedAccountOf, settingsForContext } from "./binding-facts.ts";
import { catchUpChannel } from "./catch-up.ts";
import { ChangeFeed } from "./change-feed.ts";
import { buildChannels } from "./channel-adapters.ts";
import { ChannelStarter } from "./channel-starter.ts";
import { CHANNEL_MODULES } from "./channels.ts";
import { commandMenu } from "./command-list.ts";
import { createChatCommands } from "./commands.ts";
import { agentDirsOf, DEFAULT_ACCOUNT, type GatewayConfig } from "./config/index.ts";
import { type Dashboard, readDashboard } from "./dashboard.ts";
import { answerDeliveryFor, wireDelivery } from "./delivery.ts";
import { type IdleCollector, startIdleCollector } from "./idle-collector.ts";
import { createIngress } from "./ingress.ts";
import { systemPrompt } from "./instructions.ts";
import { late } from "./late.ts";
import { gatewayMedia } from "./media.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { createModelChoices, type ModelChoices, registryModelsOf } from "./model-choice.ts";
import { announcingOutcomes } from "./outbox-changes.ts";
import { databaseReadiness, type ReadinessCheck } from "./readiness.ts";
import { createReplyTimeline } from "./reply-timeline.ts";
import { scheduleDispatcher } from "./schedule-dispatch.ts";
import { createSlackInstalls } from "./slack-installs.ts";
import { reportingOutcomes, StatusReactions } from "./status-reactions.ts";
import { usageGauges } from "./usage-gauges.ts";

export interface GatewayDeps {
  /** The opened database (`openStoreBackend`); the gateway closes it when it stops. */
  stores: StoreBackend;
  clock?: Clock;
  logger: Logger;
  /** Extra adapters (the web channel; tests). Keyed by channel, replacing configured ones. */
  extraAdapters?: ChannelAdapter[];
  /** How often agent directories are checked for changed files (ms); 0: only on SIGHUP. */
  agentPollMs?: number;
  /** OpenTelemetry (startTelemetry), when an OTLP endpoint is set: spans for ingress to delivery. */
  telemetry?: Telemetry;
}

export interface Gateway {
  readonly config: GatewayConfig;
  readonly stores: StoreBackend;
  readonly runtime: Runtime;
  readonly worker: DeliveryWorker;
  readonly schedules: ScheduleService;
  /** Every account's adapter, by slot (`telegram`, `telegram:support`; see channel-adapters.ts). */
  readonly adapters: ReadonlyMap<string, ChannelAdapter>;
  /** The Slack app's installed workspaces (SLACK_CLIENT_ID): their routes, for the HTTP server; null when off. */
  readonly slackWorkspaces?: SlackWorkspaces | null;
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

/** The step ceiling of a run that is not a child agent's (a child's is clamped below what its parent has left). */
const TOP_LEVEL_MAX_STEPS = 8;

/** How often unreferenced files and (with SWITCHBOARD_BLOB_RETENTION_DAYS) old ones are removed. */
const BLOB_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** Composes the product: store, runtime, outbox worker, schedules and channels, in one process. */
export function createGateway(config: GatewayConfig, deps: GatewayDeps): Gateway {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  const owner = newId("gw");
  const { stores } = deps;
  const metrics = createMetrics();
  const tracing = deps.telemetry?.tracing({ runtime: stores.runtime, outbox: stores.outbox }) ?? null;
  const timeline = createReplyTimeline((stage, ms) => metrics.replyStage(stage, ms));
  const changes = new ChangeFeed();
  const registry = createModelRegistry(config.modelEnv, { named: registryModelsOf(config.file) });
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
  const { adapters, factories, slots, allowLists, accountAllowLists } = buildChannels(config, {
    clock,
    logger,
    state: stores.runtime,
    commands: commandMenu(() => models.names),
  });
  for (const extra of deps.extraAdapters ?? []) {
    adapters.set(extra.channel, extra);
    factories.delete(extra.channel);
  }

  // Installed workspaces' adapters join `adapters` while the gateway runs (slack-installs.ts).
  const slackInstalls = config.slackInstalls
    ? createSlackInstalls({
        installs: config.slackInstalls,
        database: config.database,
        stores,
        clock,
        logger,
        commands: commandMenu(() => models.names),
        async attach(slot, make) {
          factories.set(slot, make);
          slots.set(slot, { channel: "slack", name: slot.slice("slack:".length) });
          adapters.set(slot, make());
          await channels.startSlot(slot);
        },
        async detach(slot) {
          const adapter = adapters.get(slot);
          factories.delete(slot);
          adapters.delete(slot);
          slots.delete(slot);
          await adapter
            ?.stop()
            .catch((error) => logger.warn("channel.stop_failed", { channel: slot, error }));
        },
        adapterInSlot: (slot) => adapters.get(slot),
        uninstalled: () => worker.notify(),
      })
    : null;
  const slackWorkspaces = slackInstalls?.workspaces ?? null;

  const agents = new AgentDirectories(agentDirsOf(config), {
    logger: logger.child({ component: "agent" }),
    clock,
    ...(deps.agentPollMs === undefined ? {} : { pollMs: deps.agentPollMs }),
  });
  const { agentFor, agentFilesOf } = agentFilesFor(agents, config);
  const approvalSecret = approvalKey(config.approvalSecret, { store: stores.runtime, clock });
  const secret = () => approvalSecret.secret();
  // The approvals and the schedules submit runs to the runtime, which is built with both.
  const runtimeRef = late<Runtime>("the runtime");
  const statusReactions = new StatusReactions({
    adapters,
    enabled: (context) => settingsForContext(config.file, context).statusReactions,
    store: stores.runtime,
    clock,
    logger: logger.child({ component: "reactions" }),
  });
  const worker = createDeliveryWorker({
    repo: reportingOutcomes(
      announcingOutcomes(stores.outbox, (change) => changes.publish(change)),
      statusReactions,
    ),
    adapters,
    ...(slackInstalls
      ? {
          dynamicChannels: new Map([["slack", slackInstalls.capabilities] as const]),
          goneReason: (channel, account) =>
            channel === "slack" ? slackInstalls.workspaces.goneReason(account) : null,
        }
      : {}),
    clock,
    ambiguousHoldMs: config.ambiguousHoldMs,
    blobs: stores.blobs,
    ...(tracing ? { tracing: tracing.deliveries } : {}),
    observer: {
      rateLimited: (channel, account) =>
        metrics.outboxRateLimited(channel, accountNameOf(config.file, channel, account)),
      ...timeline.delivery,
      firstSendAnswered: (record) => {
        timeline.delivery.firstSendAnswered(record);
        changes.publish({ kind: "outbox", outboxId: record.id, conversationId: record.conversationId });
      },
    },
    logger,
  });
  const approvals = createApprovalService({
    submit: (request) => runtimeRef.get().submit(request).admission,
    store: stores.runtime,
    outbox: stores.outbox,
    approvers: (context) => settingsForContext(config.file, context).approvers,
    secret,
    clock,
    logger: logger.child({ component: "approvals" }),
    notify: () => worker.notify(),
  });
  const schedules = createScheduleService({
    repository: stores.schedules,
    clock,
    owner,
    onEvent: (event) => {
      if (event.type === "dispatched") metrics.scheduleLateness(event.lateByMs);
      logger.debug(`schedule.${event.type}`, { ...event });
    },
    dispatch: scheduleDispatcher({
      adapters,
      accountOfKey: (channel, key) =>
        channel in CHANNEL_MODULES
          ? (CHANNEL_MODULES[channel as PlatformChannel].accountOfKey?.(key) ?? null)
          : null,
      config,
      agentFor,
      submit: (request) => runtimeRef.get().submit(request),
    }),
  });
  const mcp = new McpTools({
    servers: config.file.mcpServers,
    env: config.mcpEnv,
    logger: logger.child({ component: "mcp" }),
    clock,
    reserved: RESERVED_TOOL_NAMES,
  });
  const media = gatewayMedia(config, {
    stores,
    adapters,
    clock,
    logger,
    primarySpec: registry.chain[0].spec,
  });
  const children = Object.keys(config.file.agents).length
    ? createChildAgents({
        store: stores.runtime,
        runtime: {
          resume: (conversationId) => runtimeRef.get().resume(conversationId),
          abortLocal: (conversationId, runId) => runtimeRef.get().abortLocal(conversationId, runId),
          submit: (request) => runtimeRef.get().submit(request),
        },
        agents: config.file.agents,
        limits: config.file.agentLimits,
        topLevelMaxSteps: TOP_LEVEL_MAX_STEPS,
        agentFor: (dir) => agentFor(dir),
        budgetRefusal: async (context) => {
          if (!budgets.enabled) return null;
          const verdict = await budgets.check({
            channel: context.channel,
            surface: context.surface,
            principal: principalKey(context.channel, context.accountName, context.principal.id),
          });
          // The person's own refusal text tells them to send their message again; the model needs this.
          return verdict.kind === "refused"
            ? `the budget of the person who asked (${verdict.scope}) is used up until it resets; answer without a child agent.`
            : null;
        },
        clock,
        logger: logger.child({ component: "children" }),
      })
    : null;
  const runtime = new Runtime({
    store: stores.runtime,
    media,
    models: registry.chain,
    // Only with pickable models: otherwise every run uses the chain and reads nothing more.
    ...(models.configured ? { modelsFor: models.forRun } : {}),
    readUsage: toUsage,
    clock,
    logger: logger.child({ component: "runtime" }),
    owner,
    answerDelivery: (run, state, text, requests, parts) => {
      const delivery = answerDeliveryFor(run, state, text);
      if (!delivery) return delivery;
      // A child agent's answer is its parent's input (written by the same commit), not a message;
      // only its approval prompts reach the chat, named for the child.
      const context = readRunContext(run.context);
      const child = context?.child;
      if (child) {
        if (!requests || requests.length === 0) return null;
        return { ...delivery, text: "", prompts: childPrompts(child.agent, approvals.prompts(requests)) };
      }
      // A streamed turn handed over to a waited child says so: its answer comes later, as a new message.
      const delegated =
        state === "completed" && context?.delivery === "stream" ? handedOverTo(parts ?? []) : [];
      if (delegated.length > 0) return { ...delivery, text: withDelegationLine(text, delegated) };
      if (!requests || requests.length === 0) return delivery;
      return { ...delivery, prompts: approvals.prompts(requests) };
    },
    handsOver: waitsForChild,
    loop: { maxSteps: TOP_LEVEL_MAX_STEPS, stopPolicies: [CHILD_STEP_CEILING] },
    approvals: {
      required: (name) => mcp.requiresApproval(name),
      secret,
      timeoutMs: config.file.approvalTimeoutMs,
    },
    modelCalls: timeline.modelCalls,
    leaseRenewals: { failed: () => metrics.leaseRenewalFailed() },
    admissions: timeline.admissions,
    ...(tracing ? { tracing: tracing.runs } : {}),
    // Summaries from the offline model would be noise; any real model folds long conversations.
    ...(registry.chain[0].spec === "offline"
      ? {}
      : {
          history: {
            compaction: { afterTurns: 60, keepTurns: 30, summarize: modelSummarizer(registry.chain[0]) },
          },
        }),
    instructions: systemPrompt(config, { stores, agentFilesOf }),
    ...agentTools({
      config,
      stores,
      clock,
      schedules,
      adapters,
      logger,
      mcp,
      worker,
      agentFilesOf,
      children,
    }),
  });
  runtimeRef.set(runtime);

  const blobJanitor = new BlobJanitor({
    blobs: stores.blobs,
    references: () => stores.blobReferences(),
    conversationBlobIds: (conversationId) => stores.conversationBlobIds(conversationId),
    now: () => clock.now(),
    logger: logger.child({ component: "blobs" }),
    retentionMs: config.media.blobRetentionMs,
  });
  const commands = createChatCommands({
    runtime,
    children,
    accountNameOf: (channel, account) => namedAccountOf(config.file, channel, account),
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
        return adapterOfChannel(adapters.values(), channel)?.files?.limits;
      },
      exportTtlMs: config.media.exportTtlMs,
    },
  });
  const ingress = createIngress({
    runtime,
    store: stores.runtime,
    file: config.file,
    allowLists,
    accountAllowLists,
    admissionOf: (channel) => adapterOfChannel(adapters.values(), channel)?.admission,
    access: stores.access,
    state: stores.state,
    budgets,
    commands,
    approvals,
    metrics,
    timeline,
    clock,
    logger: logger.child({ component: "ingress" }),
    agentFor,
  });

  // Started by start(), ended by stop().
  let expiryTimer: Timer | null = null;
  let blobTimer: Timer | null = null;
  let idleCollector: IdleCollector | null = null;
  let stopNotingWork: (() => void) | null = null;
  let unwire: (() => void) | null = null;
  let externalCommits: ExternalCommitWatch | null = null;
  // Closed first on shutdown: updates are then refused (not acknowledged, so platforms redeliver
  // them later) while the adapters stay up to deliver the answers still being written.
  let accepting = true;
  const guardedIngress: typeof ingress = (message, timing) =>
    accepting
      ? tracing
        ? tracing.ingress(message, () => ingress(message, timing))
        : ingress(message, timing)
      : Promise.reject(
          new SwitchboardError(
            "runtime_closed",
            "The gateway is shutting down; deliver this update again later.",
          ),
        );
  runtime.subscribe((event) => statusReactions.handle(event));
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
    async startOne(slot, adapter) {
      const { channel } = adapter;
      const accountName = slots.get(slot)?.name ?? DEFAULT_ACCOUNT;
      await adapter.start(guardedIngress, {
        sessionRenewed: () => void catchUpChannel(channel, adapter, stores, logger),
        deliveryStatus: (report) => worker.recordPlatformStatus(report),
        ignored: (reason) => metrics.inboundIgnored(channel, accountName, reason),
      });
      logger.info("channel.started", { channel, accountName, account: adapter.account });
      await catchUpChannel(channel, adapter, stores, logger);
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
    slackWorkspaces,
    metrics,
    ingress,
    mcp,
    agents,
    models,
    blobJanitor,
    async start() {
      agents.start();
      await approvalSecret.load();
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
      unwire = wireDelivery({
        runtime,
        store: stores.runtime,
        worker,
        adapters,
        clock,
        logger,
        ...(children ? { progressLine: spawnProgressLine } : {}),
      });
      await runtime.recover({ takeOverLeases: true });
      await channels.startAll();
      await slackWorkspaces?.start();
      // One gateway per SQLite file: a claim left by a dead process fires now, not when its lease ends.
      await schedules.start({ takeOverLeases: true });
      // Pending approvals past their expiry count as denied ("expired"); checked at start and then
      // a few times per timeout (at least every 30 s).
      const sweep = () =>
        void approvals.expireDue().catch((error) => logger.warn("approval.sweep_failed", { error }));
      sweep();
      expiryTimer = clock.every(Math.max(1000, Math.min(30_000, config.file.approvalTimeoutMs / 4)), sweep);
      // Files of purges made while it was down (or by the CLI), and retention; then hourly.
      void blobJanitor.sweep();
      blobTimer = clock.every(BLOB_SWEEP_INTERVAL_MS, () => void blobJanitor.sweep());
      if (config.idleCollection) {
        const collector = startIdleCollector({
          clock,
          busy: () => runtime.lanesHeld > 0,
          collect: function collectWhileIdle() {
            const startedMs = performance.now();
            Bun.gc(true);
            logger.debug("gateway.idle_collection", {
              durationMs: Math.round(performance.now() - startedMs),
            });
          },
        });
        stopNotingWork = runtime.bus.subscribe((event) => {
          if (event.type === "terminal") collector.noteWork();
        });
        idleCollector = collector;
      }
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
      expiryTimer?.cancel();
      blobTimer?.cancel();
      idleCollector?.stop();
      stopNotingWork?.();
      channels.stop();
      slackWorkspaces?.stop();
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
      // One line per account: `channel:telegram` (its default account), `channel:telegram:support`.
      for (const [slot, adapter] of adapters) checks[`channel:${slot}`] = channels.check(slot, adapter);
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
