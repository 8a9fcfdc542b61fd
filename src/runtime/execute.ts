import type { ModelMessage, ToolSet } from "ai";
import { isSwitchboardError } from "../errors.ts";
import { bindApproval, verifyApprovalBinding } from "../util/approval-signing.ts";
import type { Clock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import { killPoint } from "../util/kill-point.ts";
import type { Logger } from "../util/log.ts";
import { boundOutput, createReadOutputTool, READ_OUTPUT, showsCutOutput } from "./bounded-output.ts";
import type { RuntimeEvent } from "./events.ts";
import { answeredBeforeCrash, endsAnswer } from "./final-step.ts";
import { withLeanInputs } from "./lean-schema.ts";
import { keepLease, type LeaseKeeper } from "./lease-keeper.ts";
import { type MediaInputs, needsPreparation, prepareInputs, shownBlobIds, userNotices } from "./media.ts";
import { buildPrompt, MEDIA_TURNS, type ProjectionMedia } from "./project.ts";
import type { RetryPolicy } from "./retry.ts";
import { type ModelEntry, runStep, type UsageReader } from "./step.ts";
import type {
  AcquiredRun,
  AnswerDelivery,
  ApprovalRequestInsert,
  Fence,
  FileDelivery,
  RunRecord,
  RuntimeStore,
} from "./store.ts";
import {
  awaitingApproval,
  decidePending,
  type HandOver,
  handedOver,
  OUTCOME_UNKNOWN,
  seedDecidedCalls,
  type ToolCallPart,
  unresolvedCalls,
  withUnknownOutcomeNotices,
} from "./tool-calls.ts";
import {
  type CatalogPlan,
  createToolSearchTool,
  DEFAULT_SCHEMA_BUDGET_BYTES,
  measureCatalog,
  offeredNames,
  planCatalog,
  TOOL_SEARCH,
} from "./tool-catalog.ts";
import type { ExecutionTrace, RunTracing } from "./tracing.ts";
import {
  answerText,
  type Message,
  type MessagePart,
  type ModelCallObserver,
  type StepRecord,
  type StopReason,
  type TerminalRunState,
  type Usage,
} from "./types.ts";

/** When the tools on offer are too many to send every step (see tool-catalog.ts). */
export interface ToolCatalogOptions {
  /** Above this many bytes of tool schemas, the catalog is deferred. Default 24 KB. */
  budgetBytes?: number;
  /** Tools offered even when the catalog is deferred (the runtime's own always are). */
  pinned?: (toolName: string) => boolean;
}

/** What a tool factory gets: the run's identity and a fence to check before any write. */
export interface ToolContext {
  conversationId: string;
  runId: string;
  /** The run's fencing token in this execution: a tool whose store write is fenced passes it. */
  fencingToken: number;
  context: unknown;
  /** Throws `fence_lost` when this run is no longer owned by this worker. */
  assertOwned: () => Promise<void>;
  /** Enqueues files for delivery in one fenced transaction (see RuntimeStore.enqueueFiles). */
  enqueueFiles: (files: FileDelivery[]) => Promise<string[]>;
}

/** A named condition checked between steps; when it holds the run ends `policy_stop`. */
export interface StopPolicy {
  name: string;
  when: (state: { run: RunRecord; parts: readonly MessagePart[]; steps: number }) => boolean;
}

export interface ExecutorOptions {
  store: RuntimeStore;
  clock: Clock;
  logger: Logger;
  models: readonly ModelEntry[];
  /** The chain for one run, asked once per execution; absent or empty: `models`. */
  modelsFor?: (run: { conversationId: string; context: unknown }) => Promise<readonly ModelEntry[]>;
  retry: RetryPolicy;
  maxSteps: number;
  idleTimeoutMs: number;
  leaseMs: number;
  maxHistoryTurns: number;
  maxHistoryTokens: number;
  stopPolicies: readonly StopPolicy[];
  /** The system prompt for each step; may read (e.g. the conversation's state) before it answers. */
  instructions?: (input: {
    conversationId: string;
    context: unknown;
    nowMs: number;
  }) => string | undefined | Promise<string | undefined>;
  tools?: (context: ToolContext) => ToolSet;
  /** Tools safe to run a second time when a crash cut a call short (default: none). */
  idempotent?: (toolName: string) => boolean;
  /** A tool result after which the run ends without another model call (see RuntimeOptions). */
  handsOver?: HandOver;
  toolCatalog?: ToolCatalogOptions;
  answerDelivery?: AnswerDeliveryFor;
  /** Attachments to model input; without it the model reads a one-line reference per file. */
  media?: MediaInputs;
  approvals?: ApprovalOptions;
  readUsage: UsageReader;
  modelCalls?: ModelCallObserver;
  /** Told of each lease renewal that failed with an error (the failures counter). */
  leaseRenewals?: LeaseRenewalObserver;
  emit: (event: RuntimeEvent) => void;
  nextSequence: (runId: string) => number;
  /** Spans for each execution, step and tool call (telemetry); absent: none. */
  tracing?: RunTracing;
}

/** Hears about lease renewals that failed with an error (metrics). */
export interface LeaseRenewalObserver {
  failed(runId: string): void;
}

/** Tool calls that wait for a person's decision (the AI SDK's tool approval). */
export interface ApprovalOptions {
  /** Whether calls of this tool ask first (unless the conversation always allows it). */
  required: (toolName: string) => boolean;
  /** HMAC key binding each request to its exact call (read when first needed). */
  secret: () => string;
  /** A request not decided within this counts as denied ("expired"). */
  timeoutMs: number;
}

/**
 * What the chat of `run`, ending in `state` with answer `text`, must show; null when the run
 * delivers nothing (it did not come from a channel). Pure: it runs before the terminal commit.
 * `approvals`: the requests a run ending `awaiting_approval` stores (their prompts go out after it).
 */
export type AnswerDeliveryFor = (
  run: RunRecord,
  state: TerminalRunState,
  text: string,
  approvals?: readonly ApprovalRequestInsert[],
  /** The answer's parts, `text` is read from (what its tool calls did). */
  parts?: readonly MessagePart[],
) => AnswerDelivery | null;

/** How one execution of a run ended, from this worker's point of view. */
export type ExecutionEnd =
  | {
      kind: "terminal";
      state: TerminalRunState;
      absorbed: string[];
      /** Other conversations its commit admitted input to (TerminalResult.resumed): to wake. */
      resumed: string[];
      /** Runs of other conversations its commit asked to stop (TerminalResult.stopped): to abort. */
      stopped: Array<{ conversationId: string; runId: string }>;
    }
  /** Given back on shutdown; it resumes from its last completed step on the next start. */
  | { kind: "released" }
  /**
   * The run's lease was lost (another owner took it, or it expired while renewals failed) and its
   * work stopped; nothing was written after. Its next owner resumes it.
   */
  | { kind: "lost" };

const STOP_STATES: Record<StopReason, TerminalRunState> = {
  interrupted: "interrupted",
  superseded: "superseded",
  timeout: "timeout",
  shutdown: "interrupted",
  // Both retract what was shown of the answer (its final text is empty).
  withdrawn: "cancelled",
  edited: "superseded",
};

/**
 * The loop is ours: one model call per step, each step's messages and usage persisted (fenced)
 * before the next begins; every continuation decision is taken between steps where it is durable.
 */
export class RunExecutor {
  /** The conversation of each run this executor is executing, for tool events. */
  private readonly conversationOf = new Map<string, string>();
  /** The lease of each run this executor is executing: every fenced write checks it first. */
  private readonly leases = new Map<string, LeaseKeeper>();
  /** The trace of each run this executor is executing, when tracing is on. */
  private readonly traces = new Map<string, ExecutionTrace>();

  constructor(private readonly options: ExecutorOptions) {}

  async execute(acquired: AcquiredRun, signal: AbortSignal): Promise<ExecutionEnd> {
    const trace = this.options.tracing?.execution(acquired.run);
    if (!trace) return this.executeRun(acquired, signal);
    this.traces.set(acquired.run.id, trace);
    try {
      const end = await trace.within(() => this.executeRun(acquired, signal));
      trace.end(end);
      return end;
    } catch (error) {
      trace.end({ kind: "error", error });
      throw error;
    } finally {
      this.traces.delete(acquired.run.id);
    }
  }

  private async executeRun(acquired: AcquiredRun, signal: AbortSignal): Promise<ExecutionEnd> {
    const { store, clock } = this.options;
    const fence = acquired.fence;
    const runId = fence.runId;
    this.conversationOf.set(runId, acquired.run.conversationId);
    let parts: MessagePart[] = [];
    // Built once per execution: tool schemas are costly to create and do not change between steps.
    let tools: PreparedTools | undefined;
    const blobBytes = new Map<string, Uint8Array>();
    // Chosen once: a /model change while the run is in flight applies from the next run on.
    let models: readonly ModelEntry[] | undefined;
    const leaseRenewals = this.options.leaseRenewals;
    const lease = keepLease({
      store,
      clock,
      logger: this.options.logger,
      fence,
      leaseMs: this.options.leaseMs,
      expiresAtMs: acquired.run.leaseExpiresAtMs ?? clock.now() + this.options.leaseMs,
      ...(leaseRenewals ? { onRenewalFailed: () => leaseRenewals.failed(runId) } : {}),
    });
    this.leases.set(runId, lease);
    // What stops the work in flight (model call, downloads): a stop request or the lease's loss.
    const work = AbortSignal.any([signal, lease.signal]);
    try {
      for (;;) {
        const ctx = await store.loadPromptContext(runId, { maxTurns: this.options.maxHistoryTurns });
        const run = ctx.run;
        let inputs = ctx.inputs;
        parts = [...(ctx.assistant?.parts ?? [])];
        if (lease.signal.aborted || run.fencingToken !== fence.fencingToken) return { kind: "lost" };
        const requested = signal.aborted ? (signal.reason as StopReason) : null;
        if (requested === "shutdown") return await this.release(fence);
        if (run.state === "interrupt_requested" || requested) {
          return await this.finish(
            inputs,
            run,
            fence,
            STOP_STATES[run.stopReason ?? requested ?? "interrupted"],
            parts,
          );
        }
        if (run.steps >= this.options.maxSteps) {
          return await this.finish(
            inputs,
            run,
            fence,
            "policy_stop",
            parts,
            `step ceiling of ${this.options.maxSteps} reached`,
          );
        }
        const media = this.options.media;
        if (media && needsPreparation(inputs)) {
          inputs = await prepareInputs({
            store,
            media,
            logger: this.options.logger,
            fence,
            conversationId: run.conversationId,
            context: run.context,
            inputs,
            signal: work,
          });
          // Stopped while downloading: the checks at the top of the loop end or release the run.
          if (work.aborted) continue;
        }
        tools ??= await this.tools(run, fence, lease);
        const seeded = seedDecidedCalls(ctx.inputs, parts, (r) => this.verifyDecision(r), clock.now());
        if (seeded) {
          this.traces.get(runId)?.decisions(ctx.inputs);
          parts = seeded;
          lease.assertHeld();
          await store.saveToolProgress(fence, parts, clock.now());
        }
        models ??= await this.modelsFor(run);
        const pending = unresolvedCalls(parts);
        if (pending.length > 0) {
          await this.resolveCalls(fence, lease, parts, pending, tools);
          continue;
        }
        if (awaitingApproval(parts).length > 0)
          return await this.finish(inputs, run, fence, "awaiting_approval", parts);
        // A call that handed the turn over (a waited child agent): the answer comes back as a
        // later input, so the run ends here rather than asking the model again.
        if (this.options.handsOver && handedOver(parts, this.options.handsOver))
          return await this.finish(inputs, run, fence, "completed", parts);
        // The last step answered but the run did not end (saved by a version that checkpointed a
        // final step before its terminal commit, and died between them): finish it instead of
        // asking the model again.
        if (answeredBeforeCrash(run, ctx.lastStep))
          return await this.finish(inputs, run, fence, "completed", parts);
        const policy = this.options.stopPolicies.find((p) => p.when({ run, parts, steps: run.steps }));
        if (policy)
          return await this.finish(inputs, run, fence, "policy_stop", parts, `stop policy ${policy.name}`);

        const alreadyJoined = new Set(parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : [])));
        const joinable = ctx.joinable.map((j) => j.message);
        const joined = joinable.filter((m) => !alreadyJoined.has(m.id));
        for (const message of joined) parts.push({ type: "joined-input", messageId: message.id });
        const current: Message[] = [
          ...inputs,
          {
            id: run.assistantMessageId,
            conversationId: run.conversationId,
            runId,
            role: "assistant",
            parts,
            status: "streaming",
            createdAtMs: clock.now(),
          },
          ...joinable,
        ];
        const instructions = withSummary(
          await this.options.instructions?.({
            conversationId: run.conversationId,
            context: run.context,
            nowMs: clock.now(),
          }),
          ctx.summary?.text,
        );
        const messages = buildPrompt(
          ctx.history,
          current,
          this.options.maxHistoryTokens,
          media
            ? await projectionMedia(
                media,
                [...ctx.history.slice(-MEDIA_TURNS).flatMap((t) => t.messages), ...current],
                blobBytes,
              )
            : undefined,
        );
        const stepTrace = this.traces.get(runId)?.step(run.steps);
        const outcome = await runStep({
          ...(stepTrace ? { trace: stepTrace } : {}),
          conversationId: run.conversationId,
          runId,
          instructions,
          messages,
          tools: tools && offeredTools(tools, parts, messages),
          ...(this.options.approvals ? { needsApproval: await this.approvalCheck(run.conversationId) } : {}),
          models,
          retry: this.options.retry,
          idleTimeoutMs: this.options.idleTimeoutMs,
          signal: work,
          clock,
          readUsage: this.options.readUsage,
          ...(this.options.modelCalls ? { modelCalls: this.options.modelCalls } : {}),
          emit: this.options.emit,
          nextSequence: () => this.options.nextSequence(runId),
        });
        stepTrace?.end(outcome);
        // Whatever the step brought, a run whose lease is lost records nothing more.
        if (lease.signal.aborted) return { kind: "lost" };
        if (outcome.kind === "stopped") {
          if (outcome.reason === "shutdown") return await this.release(fence);
          const stopped = await store.loadRun(runId);
          const reason = stopped?.run.stopReason ?? outcome.reason;
          return await this.finish(inputs, run, fence, STOP_STATES[reason], [...parts, ...outcome.partial]);
        }
        if (outcome.kind === "failed") {
          return await this.finish(inputs, run, fence, "failed", parts, outcome.error);
        }
        parts.push(...(tools ? withSearchHints(tools, outcome.parts) : outcome.parts));
        const step: StepRecord = {
          step: run.steps,
          model: outcome.model,
          finishReason: outcome.finishReason,
          usage: outcome.usage satisfies Usage,
          startedAtMs: outcome.startedAtMs,
          finishedAtMs: clock.now(),
        };
        if (endsAnswer(outcome.finishReason))
          return await this.finish(inputs, run, fence, "completed", parts, undefined, step);
        lease.assertHeld();
        await store.checkpoint({
          fence,
          assistantParts: parts,
          step,
          joinedInputIds: joined.map((m) => m.id),
          nowMs: clock.now(),
        });
        killPoint("step.persisted");
      }
    } catch (error) {
      if (isSwitchboardError(error, "fence_lost")) {
        // A lost lease was logged when it was found (run.lease_lost).
        if (!lease.signal.aborted)
          this.options.logger.warn("run.fence_lost", { runId, fencingToken: fence.fencingToken });
        return { kind: "lost" };
      }
      throw error;
    } finally {
      lease.stop();
      this.leases.delete(runId);
      this.conversationOf.delete(runId);
    }
  }

  private async modelsFor(run: RunRecord): Promise<readonly ModelEntry[]> {
    if (!this.options.modelsFor) return this.options.models;
    try {
      const chosen = await this.options.modelsFor({
        conversationId: run.conversationId,
        context: run.context,
      });
      return chosen.length > 0 ? chosen : this.options.models;
    } catch (error) {
      this.options.logger.warn("run.model_choice_failed", { runId: run.id, error });
      return this.options.models;
    }
  }

  /**
   * The tools offered to the model, without their `execute`: the model step stops at its tool
   * calls, and the runtime runs them itself (see resolveCalls), so each is durable before it runs.
   */
  private async tools(run: RunRecord, fence: Fence, lease: LeaseKeeper): Promise<PreparedTools | undefined> {
    if (!this.options.tools) return undefined;
    const assertOwned = async () => {
      lease.assertHeld();
      await this.options.store.assertFence(fence);
    };
    const created: ToolSet = this.options.tools({
      conversationId: run.conversationId,
      runId: run.id,
      fencingToken: fence.fencingToken,
      context: run.context,
      assertOwned,
      enqueueFiles: async (files) => {
        lease.assertHeld();
        return await this.options.store.enqueueFiles(fence, files, this.options.clock.now());
      },
    });
    if (Object.keys(created).length === 0) return undefined;
    created[READ_OUTPUT] = createReadOutputTool(this.options.store, run.conversationId);
    const tools = withLeanInputs(created);
    const catalog = this.options.toolCatalog;
    const plan = planCatalog(
      await measureCatalog(tools),
      catalog?.budgetBytes ?? DEFAULT_SCHEMA_BUDGET_BYTES,
      (name) => RUNTIME_TOOLS.has(name) || (catalog?.pinned?.(name) ?? false),
    );
    if (plan.deferred) Object.assign(tools, withLeanInputs({ [TOOL_SEARCH]: createToolSearchTool(plan) }));
    const all: ToolSet = {};
    const execute = new Map<string, ToolExecute>();
    for (const [name, definition] of Object.entries(tools)) {
      const { execute: run, ...rest } = definition;
      all[name] = rest as typeof definition;
      if (run) {
        execute.set(name, async (input, toolCallId) => {
          await assertOwned();
          // A lost lease signals the call (an MCP server is sent notifications/cancelled).
          return run(input as never, { toolCallId, messages: [], abortSignal: lease.signal } as never);
        });
      }
    }
    return { all, execute, plan };
  }

  /**
   * Runs the calls the last step made, in order, each marked started (a fenced save) before it
   * runs and saved with its result after. A call found started without a result was cut short
   * by a crash: `decidePending` says whether it runs again or is reported as unknown. Once the
   * lease is lost no call starts, and a call in flight is signalled and its result not saved:
   * the next owner finds it started without a result, as after a crash.
   */
  private async resolveCalls(
    fence: Fence,
    lease: LeaseKeeper,
    parts: MessagePart[],
    pending: ToolCallPart[],
    tools: PreparedTools | undefined,
  ): Promise<void> {
    const { store, clock, logger } = this.options;
    for (const call of pending) {
      lease.assertHeld();
      const idempotent =
        RUNTIME_TOOLS.has(call.toolName) || (this.options.idempotent?.(call.toolName) ?? false);
      const decision = decidePending(call, idempotent);
      if (decision.kind === "unknown") {
        logger.warn("tool.outcome_unknown", {
          runId: fence.runId,
          tool: call.toolName,
          toolCallId: call.toolCallId,
        });
        parts.push({
          type: "tool-result",
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: OUTCOME_UNKNOWN,
          isError: true,
          finishedAtMs: clock.now(),
        });
        await store.saveToolProgress(fence, parts, clock.now());
        this.traces.get(fence.runId)?.toolCall(call, null).end({ outcome: "unknown" });
        this.emitTool(fence.runId, call, "failed");
        continue;
      }
      if (decision.attempt > 1) {
        logger.warn("tool.run_again", {
          runId: fence.runId,
          tool: call.toolName,
          toolCallId: call.toolCallId,
        });
      }
      parts[parts.indexOf(call)] = { ...call, startedAtMs: clock.now(), attempts: decision.attempt };
      await store.saveToolProgress(fence, parts, clock.now());
      killPoint("tool.started");
      const toolTrace = this.traces.get(fence.runId)?.toolCall(call, decision.attempt);
      const result = await (toolTrace ? toolTrace.within(() => runTool(tools, call)) : runTool(tools, call));
      toolTrace?.end({ outcome: result.isError ? "failed" : "completed", output: result.output });
      lease.assertHeld();
      // read_output pages are bounded by the tool itself; any other result over the limit is kept.
      const bounded =
        call.toolName === READ_OUTPUT
          ? { output: result.output, spilled: null }
          : boundOutput(result.output, newId("out"));
      parts.push({
        type: "tool-result",
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: bounded.output,
        isError: result.isError,
        finishedAtMs: clock.now(),
      });
      if (bounded.spilled) {
        logger.info("tool.output_stored", {
          runId: fence.runId,
          tool: call.toolName,
          toolCallId: call.toolCallId,
          ref: bounded.spilled.ref,
          chars: bounded.spilled.text.length,
        });
      }
      await store.saveToolProgress(
        fence,
        parts,
        clock.now(),
        bounded.spilled
          ? { ...bounded.spilled, toolCallId: call.toolCallId, toolName: call.toolName }
          : undefined,
      );
      this.emitTool(fence.runId, call, result.isError ? "failed" : "completed");
    }
  }

  /** Tools that ask first in this conversation: the configured ones, less those it always allows. */
  private async approvalCheck(conversationId: string): Promise<(toolName: string) => boolean> {
    const approvals = this.options.approvals!;
    const settings = await this.options.store.loadConversationSettings(conversationId);
    const allowed = new Set(settings.alwaysAllow ?? []);
    return (toolName) => approvals.required(toolName) && !allowed.has(toolName);
  }

  /** An approved call runs only when the request it answers was signed for exactly that call. */
  private verifyDecision(response: Parameters<Parameters<typeof seedDecidedCalls>[2]>[0]): boolean {
    const secret = this.options.approvals?.secret();
    const ok = secret !== undefined && verifyApprovalBinding(secret, response, response.binding);
    if (!ok) {
      this.options.logger.warn("approval.binding_mismatch", {
        approvalId: response.approvalId,
        tool: response.toolName,
        hint: "the stored request does not match its signature; the call was not run",
      });
    }
    return ok;
  }

  /** The requests a run ending at approvals stores, each bound to its call by HMAC. */
  private approvalRequests(parts: readonly MessagePart[]): ApprovalRequestInsert[] {
    const approvals = this.options.approvals;
    if (!approvals) return [];
    const calls = new Map(parts.flatMap((p) => (p.type === "tool-call" ? [[p.toolCallId, p] as const] : [])));
    const expiresAtMs = this.options.clock.now() + approvals.timeoutMs;
    return awaitingApproval(parts).flatMap((request) => {
      const call = calls.get(request.toolCallId);
      if (!call) return [];
      const bound = { approvalId: request.approvalId, toolCallId: call.toolCallId, toolName: call.toolName };
      return [
        {
          id: request.approvalId,
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: call.input,
          binding: bindApproval(approvals.secret(), { ...bound, input: call.input }),
          expiresAtMs,
        },
      ];
    });
  }

  private emitTool(runId: string, call: ToolCallPart, status: "completed" | "failed"): void {
    const conversationId = this.conversationOf.get(runId);
    if (!conversationId) return;
    this.options.emit({
      type: "tool-status",
      durable: false,
      conversationId,
      runId,
      sequence: this.options.nextSequence(runId),
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      status,
    });
  }

  private async finish(
    inputs: readonly Message[],
    run: RunRecord,
    fence: Fence,
    state: TerminalRunState,
    parts: MessagePart[],
    error?: string,
    /** The step that answered: saved in the terminal commit, not in a checkpoint of its own. */
    finalStep?: StepRecord,
  ): Promise<ExecutionEnd> {
    this.leases.get(fence.runId)?.assertHeld();
    // Joined inputs are absorbed only by a completed run; otherwise their own runs answer them,
    // so they must not also appear inside this turn.
    const notices = userNotices(inputs).map((line): MessagePart => ({ type: "text", text: `⚠️ ${line}\n\n` }));
    const assistantParts = [
      ...notices,
      ...withUnknownOutcomeNotices(
        state === "completed" ? parts : parts.filter((p) => p.type !== "joined-input"),
      ),
    ];
    const approvals = state === "awaiting_approval" ? this.approvalRequests(assistantParts) : [];
    const delivery =
      this.options.answerDelivery?.(run, state, answerText(assistantParts), approvals, assistantParts) ??
      null;
    const result = await this.options.store.commitTerminal({
      fence,
      state,
      assistantParts,
      ...(error === undefined ? {} : { error }),
      ...(delivery ? { delivery } : {}),
      ...(approvals.length > 0 ? { approvals } : {}),
      ...(finalStep ? { finalStep: { step: finalStep, parts } } : {}),
      nowMs: this.options.clock.now(),
    });
    if (finalStep) killPoint("step.persisted");
    killPoint("run.terminal-committed");
    if (result.resumed.length > 0) killPoint("run.input-handed-on");
    return {
      kind: "terminal",
      state,
      absorbed: result.absorbed,
      resumed: result.resumed,
      stopped: result.stopped,
    };
  }

  private async release(fence: Fence): Promise<ExecutionEnd> {
    this.leases.get(fence.runId)?.assertHeld();
    await this.options.store.releaseRun(fence, this.options.clock.now());
    return { kind: "released" };
  }
}

type ToolExecute = (input: unknown, toolCallId: string) => Promise<unknown>;

interface PreparedTools {
  /** Every tool of the run (without execute), the runtime's own included. */
  all: ToolSet;
  execute: Map<string, ToolExecute>;
  plan: CatalogPlan;
}

/** The runtime's own tools: read-only, always offered when the run has tools. */
const RUNTIME_TOOLS: ReadonlySet<string> = new Set([READ_OUTPUT, TOOL_SEARCH]);

/**
 * A call to a tool of a deferred catalog that was not offered fails in the model step (the SDK
 * does not know it); its error then tells the model how to reach it rather than only "unavailable".
 */
function withSearchHints(tools: PreparedTools, parts: readonly MessagePart[]): MessagePart[] {
  if (!tools.plan.deferred) return [...parts];
  const searchable = new Set(tools.plan.searchable.map((e) => e.name));
  return parts.map((part) =>
    part.type === "tool-result" && part.isError && searchable.has(part.toolName) && unoffered(part.output)
      ? {
          ...part,
          output: `${part.toolName} is not offered yet: call ${TOOL_SEARCH} first (its name is a good query), then call it from your next step`,
        }
      : part,
  );
}

function unoffered(output: unknown): boolean {
  return typeof output === "string" && /unavailable tool|no such tool/i.test(output);
}

/**
 * The tools offered to the next step: all, or (deferred) the pinned ones, tool_search and the
 * selection; read_output only while `messages` show a cut output (called without one, the model
 * is told the tool is unavailable).
 */
function offeredTools(
  tools: PreparedTools,
  parts: readonly MessagePart[],
  messages: readonly ModelMessage[],
): ToolSet {
  const offered: ToolSet = {};
  const cut = showsCutOutput(messages);
  for (const name of offeredNames(tools.plan, parts)) {
    if (name === READ_OUTPUT && !cut) continue;
    const definition = tools.all[name];
    if (definition) offered[name] = definition;
  }
  return offered;
}

/** One call's result; a thrown error is the model's to see, except losing the run's fence. */
async function runTool(
  tools: PreparedTools | undefined,
  call: ToolCallPart,
): Promise<{ output: unknown; isError: boolean }> {
  const execute = tools?.execute.get(call.toolName);
  if (!execute) {
    return {
      output: `tool ${call.toolName} is not available now (its server may be down); try again later or answer without it`,
      isError: true,
    };
  }
  try {
    return { output: (await execute(call.input, call.toolCallId)) ?? null, isError: false };
  } catch (error) {
    if (isSwitchboardError(error, "fence_lost")) throw error;
    return { output: error instanceof Error ? error.message : String(error), isError: true };
  }
}

/** The bytes of the blobs the prompt may show, read once per execution (`cache`). */
async function projectionMedia(
  media: MediaInputs,
  messages: readonly Message[],
  cache: Map<string, Uint8Array>,
): Promise<ProjectionMedia> {
  for (const id of shownBlobIds(messages)) {
    if (cache.has(id)) continue;
    const bytes = await media.read(id);
    if (bytes) cache.set(id, bytes);
  }
  return { accepts: media.accepts, bytes: cache };
}

/** The compaction summary travels with the instructions, ahead of the recent turns. */
function withSummary(instructions: string | undefined, summary: string | undefined): string | undefined {
  if (!summary) return instructions;
  const block = `Summary of the earlier conversation (older turns are not shown):\n${summary}`;
  return instructions ? `${instructions}\n\n${block}` : block;
}
