import { createHash } from "node:crypto";
import type { ToolSet } from "ai";
import { SwitchboardError } from "../errors.ts";
import { type Clock, systemClock, type Timer } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { afterQueuedWork } from "../util/yield.ts";
import { EventBus, type Listener } from "./bus.ts";
import { type CompactionPolicy, compactConversation } from "./compaction.ts";
import type { RuntimeEvent } from "./events.ts";
import {
  type AnswerDeliveryFor,
  type ApprovalOptions,
  type ExecutionEnd,
  type LeaseRenewalObserver,
  RunExecutor,
  type StopPolicy,
  type ToolCatalogOptions,
  type ToolContext,
} from "./execute.ts";
import { Lane } from "./lane.ts";
import type { MediaInputs } from "./media.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
import type { ModelEntry, UsageReader } from "./step.ts";
import type { AdmitResult, ApprovalDecision, IngressIdentity, RunRecord, RuntimeStore } from "./store.ts";
import type { HandOver } from "./tool-calls.ts";
import { type RunTracing, withTraceParent } from "./tracing.ts";
import {
  answerText,
  type InputPart,
  type InputPolicy,
  isTerminalState,
  type ModelCallObserver,
  type RunState,
  type StopReason,
  type Usage,
} from "./types.ts";

export interface SubmitRequest {
  /** The conversation by id; or `conversationKey`, resolved durably inside admission. */
  conversationId?: string;
  conversationKey?: string;
  /** Same key, same input → same run and answer, also after a restart. */
  idempotencyKey: string;
  context?: unknown;
  parts: InputPart[];
  /** Which surface the input came from (e.g. `telegram:dm`); the policy function reads it. */
  surface?: string;
  /** Overrides the policy function for this submission. */
  policy?: InputPolicy;
  /** External dedupe identity recorded in the admission transaction. */
  ingress?: IngressIdentity;
  /** The input decides a pending approval (recorded with the admission). */
  approval?: ApprovalDecision;
}

export interface Admission {
  outcome: AdmitResult["outcome"];
  conversationId: string;
  runId: string;
  inputMessageId: string;
  /** Conversation version right after the admission committed. */
  version: number;
  /** The input began its conversation: its admission is the conversation's first durable event. */
  startsConversation: boolean;
  /** Pending approvals this input cancelled (a newer message under `supersede`/`interrupt`). */
  cancelledApprovals: string[];
}

/** The terminal outcome a ticket resolves to. */
export interface RunOutcome {
  runId: string;
  state: RunState;
  /** The run whose answer this is (differs from runId when absorbed). */
  answeredBy: string;
  text: string;
  usage: Usage;
  /** False when some step's cost was unavailable. */
  costComplete: boolean;
  error: string | null;
}

export interface Ticket {
  /** Resolves once the input is durably committed and assigned a run. */
  admission: Promise<Admission>;
  /** Resolves with the run's terminal outcome. */
  result: Promise<RunOutcome>;
}

export interface RuntimeOptions {
  store: RuntimeStore;
  /** The model chain: the first is used, later ones are fallbacks. */
  models: readonly ModelEntry[];
  /**
   * The chain for one run (e.g. the conversation's /model choice), asked once when its execution
   * starts, so a run in flight keeps its model. Default: `models`.
   */
  modelsFor?: (run: { conversationId: string; context: unknown }) => Promise<readonly ModelEntry[]>;
  clock?: Clock;
  logger?: Logger;
  /** This worker's identity in run ownership. */
  owner?: string;
  /** How long ownership lasts without renewal (renewed every third of it). Default 30 s. */
  leaseMs?: number;
  /** Chosen per submission: each surface decides what a new input does to a running answer. */
  inputPolicy?: InputPolicy | ((request: SubmitRequest) => InputPolicy);
  /** With true, inputs that arrive while a successor is queued join that successor. */
  coalescePending?: boolean | ((request: SubmitRequest) => boolean);
  /** The system prompt for each step; may read (e.g. the conversation's state) before it answers. */
  instructions?: (input: {
    conversationId: string;
    context: unknown;
    nowMs: number;
  }) => string | undefined | Promise<string | undefined>;
  tools?: (context: ToolContext) => ToolSet;
  /**
   * Tools safe to run again when a crash cut a call short; any other such call is reported to the
   * model and the user as of unknown outcome and never run again.
   */
  idempotent?: (toolName: string) => boolean;
  /**
   * A tool result that hands the turn over: the run ends `completed` after the step's calls,
   * without asking the model again, because the answer comes back later as an input (a child
   * agent the model waits for). Default: none does.
   */
  handsOver?: HandOver;
  /** The deferred tool catalog (tool_search): the schema byte budget and the tools always offered. */
  toolCatalog?: ToolCatalogOptions;
  /**
   * What a finished run's chat must show; the store writes it with the terminal commit (the
   * outbox record). Without it, or when it answers null, a run delivers nothing.
   */
  answerDelivery?: AnswerDeliveryFor;
  /** Attachments to model input (download, blob store, scaling, transcription); see media.ts. */
  media?: MediaInputs;
  /**
   * Tool calls that wait for a person: such a run ends `awaiting_approval` with the request
   * stored; a decision admitted with `approval` starts the successor that runs (or denies) it.
   */
  approvals?: ApprovalOptions;
  /** Reads a step's usage from what the provider reported (the gateway passes `toUsage`). */
  readUsage: UsageReader;
  /** Told when each model call starts and ends (latency metrics). */
  modelCalls?: ModelCallObserver;
  /** Told of each lease renewal that failed with an error (switchboard_lease_renewal_failures_total). */
  leaseRenewals?: LeaseRenewalObserver;
  /**
   * Told the moment an input's admission committed (T1), before its run is woken: a lane's
   * acquisition runs synchronously on the embedded engine, so a stamp taken later would include it.
   */
  admissions?: { committed(runId: string): void };
  /** Spans for admissions, executions, steps and tool calls (telemetry on); absent: none. */
  tracing?: RunTracing;
  loop?: {
    /** Step ceiling; reaching it ends the run `policy_stop`. Default 8. */
    maxSteps?: number;
    /** Provider silence longer than this ends the run `timeout`. Default 60 s. */
    idleTimeoutMs?: number;
    stopPolicies?: StopPolicy[];
    retry?: RetryPolicy;
  };
  history?: {
    maxTurns?: number;
    maxTokens?: number;
    /** Summarising compaction, checked after each completed run. Off when absent. */
    compaction?: CompactionPolicy;
  };
  /**
   * False for an admit-only process: inputs are committed and queued but this process runs no
   * model calls (another worker, or a later start, executes them). Default true.
   */
  executeRuns?: boolean;
}

export interface CloseResult {
  settled: boolean;
  timedOut: boolean;
  remaining: number;
}

interface Waiter {
  resolve: (outcome: RunOutcome) => void;
  reject: (error: unknown) => void;
}

export function fingerprintOf(parts: readonly InputPart[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}

/**
 * The durable agent runtime. A run outlives the request that started it: `submit` commits the
 * input before anything else happens, a per-conversation lane executes runs in durable order,
 * and `recover` picks up whatever a previous process left.
 */
export class Runtime {
  readonly owner: string;
  readonly bus: EventBus;
  private readonly store: RuntimeStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly leaseMs: number;
  private readonly executor: RunExecutor;
  private readonly lanes = new Map<string, Lane>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly sequences = new Map<string, number>();
  private closing = false;

  constructor(private readonly options: RuntimeOptions) {
    if (options.models.length === 0) {
      throw new SwitchboardError(
        "config_invalid",
        "The runtime needs at least one model (SWITCHBOARD_MODEL).",
      );
    }
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.owner = options.owner ?? newId("worker");
    this.leaseMs = options.leaseMs ?? 30_000;
    this.bus = new EventBus(this.store);
    this.executor = new RunExecutor({
      store: this.store,
      clock: this.clock,
      logger: this.logger,
      models: options.models,
      ...(options.modelsFor ? { modelsFor: options.modelsFor } : {}),
      retry: options.loop?.retry ?? DEFAULT_RETRY,
      maxSteps: options.loop?.maxSteps ?? 8,
      idleTimeoutMs: options.loop?.idleTimeoutMs ?? 60_000,
      leaseMs: this.leaseMs,
      maxHistoryTurns: options.history?.maxTurns ?? 40,
      maxHistoryTokens: options.history?.maxTokens ?? 24_000,
      stopPolicies: options.loop?.stopPolicies ?? [],
      ...(options.instructions ? { instructions: options.instructions } : {}),
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.idempotent ? { idempotent: options.idempotent } : {}),
      ...(options.handsOver ? { handsOver: options.handsOver } : {}),
      ...(options.toolCatalog ? { toolCatalog: options.toolCatalog } : {}),
      ...(options.answerDelivery ? { answerDelivery: options.answerDelivery } : {}),
      ...(options.media ? { media: options.media } : {}),
      ...(options.approvals ? { approvals: options.approvals } : {}),
      readUsage: options.readUsage,
      ...(options.modelCalls ? { modelCalls: options.modelCalls } : {}),
      ...(options.leaseRenewals ? { leaseRenewals: options.leaseRenewals } : {}),
      ...(options.tracing ? { tracing: options.tracing } : {}),
      emit: (event) => this.bus.emit(event),
      nextSequence: (runId) => {
        const next = (this.sequences.get(runId) ?? 0) + 1;
        this.sequences.set(runId, next);
        return next;
      },
    });
  }

  /** Conversations this process holds an executor lane for: those with work, not every one seen. */
  get lanesHeld(): number {
    return this.lanes.size;
  }

  get models(): readonly ModelEntry[] {
    return this.options.models;
  }

  subscribe(listener: Listener): () => void {
    return this.bus.subscribe(listener);
  }

  /** Snapshot-then-live events of one conversation from a durable cursor. */
  follow(conversationId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    return this.bus.follow(conversationId, afterSeq, signal);
  }

  submit(request: SubmitRequest): Ticket {
    const admission = this.admit(request);
    // The caller may only await one of them; never let the other become an unhandled rejection.
    admission.catch(() => {});
    // Waited for only when read: most callers (ingress) never do, and a waiter costs a store
    // read when its run ends. Read late, the run may have ended already, so look in the store.
    let result: Promise<RunOutcome> | undefined;
    const waitFor = (runId: string) => this.waitFor(runId, true);
    return {
      admission,
      get result() {
        if (!result) {
          result = admission.then((a) => waitFor(a.runId));
          result.catch(() => {});
        }
        return result;
      },
    };
  }

  private async admit(request: SubmitRequest): Promise<Admission> {
    if (this.closing) {
      throw new SwitchboardError("runtime_closed", "The runtime is shutting down and accepts no new input.");
    }
    if (!request.conversationId === !request.conversationKey) {
      throw new SwitchboardError(
        "input_invalid",
        "submit() needs exactly one of conversationId or conversationKey.",
      );
    }
    if (request.parts.length === 0) {
      throw new SwitchboardError("input_invalid", "submit() needs at least one input part.");
    }
    const policy =
      request.policy ??
      (typeof this.options.inputPolicy === "function"
        ? this.options.inputPolicy(request)
        : (this.options.inputPolicy ?? "queue"));
    const coalesce =
      typeof this.options.coalescePending === "function"
        ? this.options.coalescePending(request)
        : (this.options.coalescePending ?? false);
    const nowMs = this.clock.now();
    const admit = (traceparent?: string) =>
      this.store.admit({
        conversation: request.conversationId
          ? { id: request.conversationId }
          : { key: request.conversationKey! },
        idempotencyKey: request.idempotencyKey,
        fingerprint: fingerprintOf(request.parts),
        parts: request.parts,
        context: withTraceParent(request.context ?? null, traceparent),
        policy,
        coalescePending: coalesce,
        ...(request.ingress ? { ingress: request.ingress } : {}),
        ...(request.approval ? { approval: request.approval } : {}),
        proposedIds: { runId: newId("run", nowMs), messageId: newId("msg", nowMs) },
        nowMs,
      });
    const result = this.options.tracing ? await this.options.tracing.admission(admit) : await admit();
    if (result.outcome !== "duplicate") {
      this.options.admissions?.committed(result.runId);
      for (const runId of result.superseded) void this.settleFromStore(runId);
      for (const stop of result.stopRequested)
        this.lanes.get(result.conversationId)?.abort(stop.runId, stop.reason);
      this.wake(result.conversationId);
    }
    return {
      outcome: result.outcome,
      conversationId: result.conversationId,
      runId: result.runId,
      inputMessageId: result.inputMessageId,
      version: result.version,
      startsConversation: result.outcome === "admitted" && result.seq === 1,
      cancelledApprovals: result.outcome === "duplicate" ? [] : result.cancelledApprovals,
    };
  }

  /**
   * Durably stops the conversation's running answer (or the given run): commits the request
   * before aborting, so the stop survives a crash. Returns false when nothing was active.
   */
  async interrupt(target: {
    conversationId: string;
    runId?: string;
    /**
     * `superseded` throws the answer away (nothing of it is shown); `withdrawn` (its message was
     * deleted) and `edited` (it was corrected) end it and retract what was shown, and are recorded
     * as the run's stop reason; default `interrupted`.
     */
    reason?: "interrupted" | "superseded" | "withdrawn" | "edited";
  }): Promise<boolean> {
    const reason = target.reason ?? "interrupted";
    const runs = await this.store.listActiveRuns(target.conversationId);
    const run = target.runId
      ? runs.find((r) => r.id === target.runId)
      : (runs.find((r) => r.state === "running" || r.state === "interrupt_requested") ?? runs[0]);
    if (!run) return false;
    const outcome = await this.store.requestStop(run.id, reason, this.clock.now());
    if (outcome.outcome === "not_active") return false;
    if (outcome.outcome === "ended") void this.settleFromStore(run.id);
    else this.lanes.get(target.conversationId)?.abort(run.id, reason);
    this.wake(target.conversationId);
    return true;
  }

  /**
   * Resumes what a previous process left: scans active runs in bounded pages and wakes each
   * conversation's lane, which restores durable order (a run to resume first, then urgent, then
   * ordinary FIFO). With `takeOverLeases`, leases held by other owners are treated as expired —
   * only for a single-process deployment (the embedded SQLite default).
   */
  async recover(
    options: { takeOverLeases?: boolean; pageSize?: number } = {},
  ): Promise<{ conversations: number }> {
    const pageSize = options.pageSize ?? 200;
    const conversations = new Set<string>();
    let after = 0;
    for (;;) {
      const page: RunRecord[] = await this.store.scanRecoverable({ afterQueueSeq: after, limit: pageSize });
      for (const run of page) {
        conversations.add(run.conversationId);
        after = run.queueSeq;
      }
      if (page.length < pageSize) break;
    }
    if (options.takeOverLeases)
      await this.store.expireLeases({ exceptOwner: this.owner, nowMs: this.clock.now() });
    for (const conversationId of conversations) this.wake(conversationId);
    this.logger.info("runtime.recovered", { conversations: conversations.size });
    return { conversations: conversations.size };
  }

  /**
   * Two-phase shutdown: stop admitting, give running runs `gracePeriodMs` to finish, then abort
   * them (they are released, to resume on the next start) and wait at most `forceTimeoutMs`.
   */
  async close(options: { gracePeriodMs?: number; forceTimeoutMs?: number } = {}): Promise<CloseResult> {
    this.closing = true;
    for (const lane of this.lanes.values()) lane.closing = true;
    const idle = () => Promise.all([...this.lanes.values()].map((l) => l.idle()));
    const within = async (ms: number) => {
      let timer: Timer | undefined;
      const done = await Promise.race([
        idle().then(() => true),
        new Promise<boolean>((r) => {
          timer = this.clock.setTimer(ms, () => r(false));
        }),
      ]);
      timer?.cancel();
      return done;
    };
    if (await within(options.gracePeriodMs ?? 10_000))
      return { settled: true, timedOut: false, remaining: 0 };
    for (const lane of this.lanes.values()) lane.abortActive("shutdown");
    const settled = await within(options.forceTimeoutMs ?? 5_000);
    const remaining = [...this.lanes.values()].filter((l) => l.busy).length;
    if (settled) this.bus.close();
    return { settled, timedOut: !settled, remaining };
  }

  /** Called by a lane when an execution ended. */
  private async onExecutionEnd(conversationId: string, runId: string, end: ExecutionEnd): Promise<void> {
    this.sequences.delete(runId);
    if (end.kind !== "terminal") return;
    for (const stopped of end.stopped) this.abortLocal(stopped.conversationId, stopped.runId);
    for (const resumed of end.resumed) this.wake(resumed);
    await this.settleFromStore(runId);
    if (end.state === "completed") this.scheduleCompaction(conversationId, runId);
    for (const absorbed of end.absorbed) await this.settleFromStore(absorbed);
  }

  /**
   * Lets the conversation's lane look for work committed outside `submit` (a child agent's task or
   * result, admitted by the store in another transaction).
   */
  resume(conversationId: string): void {
    this.wake(conversationId);
  }

  /**
   * Aborts where it executes in this process a run the store was already asked to stop (a child
   * agent stopped with its parent); elsewhere its owner sees the request at its next step.
   */
  abortLocal(conversationId: string, runId: string): void {
    this.lanes.get(conversationId)?.abort(runId, "interrupted");
    this.wake(conversationId);
  }

  /** Lets the conversation's lane look for work; an admit-only runtime (executeRuns: false) never executes. */
  private wake(conversationId: string): void {
    if (this.options.executeRuns === false) return;
    this.lane(conversationId).kick();
  }

  private readonly compacting = new Set<string>();

  /** Compacts the conversation in the background; a failure only costs a longer prompt. */
  private scheduleCompaction(conversationId: string, runId: string): void {
    const policy = this.options.history?.compaction;
    if (!policy) return;
    void (async () => {
      // Background work: the reply's delivery goes first.
      await afterQueuedWork();
      if (this.compacting.has(conversationId)) return;
      this.compacting.add(conversationId);
      try {
        await this.compact(conversationId);
      } finally {
        this.compacting.delete(conversationId);
      }
    })().catch((error) => this.logger.warn("runtime.compaction_failed", { runId, error }));
  }

  /** Runs compaction for one conversation now (operators, tests). */
  compact(conversationId: string): Promise<"compacted" | "not_needed" | "conflict"> {
    const policy = this.options.history?.compaction;
    if (!policy) return Promise.resolve("not_needed");
    return compactConversation({
      store: this.store,
      conversationId,
      policy,
      clock: this.clock,
      logger: this.logger,
      signal: AbortSignal.timeout(120_000),
    });
  }

  private lane(conversationId: string): Lane {
    const existing = this.lanes.get(conversationId);
    if (existing) return existing;
    const lane: Lane = new Lane({
      conversationId,
      owner: this.owner,
      store: this.store,
      clock: this.clock,
      logger: this.logger,
      leaseMs: this.leaseMs,
      execute: (acquired, signal) => this.executor.execute(acquired, signal),
      onEnd: (runId, end) => this.onExecutionEnd(conversationId, runId, end),
      // A process meets many conversations over its life; only those with work keep a lane.
      onIdle: () => {
        if (this.lanes.get(conversationId) === lane && !this.closing) this.lanes.delete(conversationId);
      },
    });
    lane.closing = this.closing;
    this.lanes.set(conversationId, lane);
    return lane;
  }

  private waitFor(runId: string, checkStore: boolean): Promise<RunOutcome> {
    return new Promise<RunOutcome>((resolve, reject) => {
      const list = this.waiters.get(runId) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(runId, list);
      if (checkStore) void this.settleFromStore(runId);
    });
  }

  /** Resolves the waiters of `runId` if it is terminal in the store. */
  private async settleFromStore(runId: string): Promise<void> {
    if (!this.waiters.has(runId)) return;
    const view = await this.store.loadRun(runId);
    if (!view || !isTerminalState(view.run.state)) return;
    let outcome: RunOutcome = {
      runId,
      state: view.run.state,
      answeredBy: runId,
      text: answerText(view.answer?.parts ?? []),
      usage: view.run.usage,
      costComplete: view.run.costComplete,
      error: view.run.error,
    };
    if (view.run.state === "absorbed" && view.run.absorbedInto) {
      const answering = await this.store.loadRun(view.run.absorbedInto);
      outcome = {
        ...outcome,
        answeredBy: view.run.absorbedInto,
        text: answerText(answering?.answer?.parts ?? []),
      };
    }
    const list = this.waiters.get(runId) ?? [];
    this.waiters.delete(runId);
    for (const waiter of list) waiter.resolve(outcome);
  }

  /** Asks the active run of a conversation to stop for `reason` (process-local signal only). */
  stopLocal(conversationId: string, reason: StopReason): void {
    this.lanes.get(conversationId)?.abortActive(reason);
  }
}
