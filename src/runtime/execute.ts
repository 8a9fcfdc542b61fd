import type { ToolSet } from "ai";
import { isSwitchboardError } from "../errors.ts";
import type { Clock } from "../util/clock.ts";
import { killPoint } from "../util/kill-point.ts";
import type { Logger } from "../util/log.ts";
import type { RuntimeEvent } from "./events.ts";
import { buildPrompt } from "./project.ts";
import type { RetryPolicy } from "./retry.ts";
import { type ModelEntry, runStep, type UsageReader } from "./step.ts";
import type { AcquiredRun, AnswerDelivery, Fence, RunRecord, RuntimeStore } from "./store.ts";
import {
  decidePending,
  OUTCOME_UNKNOWN,
  type ToolCallPart,
  unresolvedCalls,
  withUnknownOutcomeNotices,
} from "./tool-calls.ts";
import {
  answerText,
  type Message,
  type MessagePart,
  type ModelCallObserver,
  type StopReason,
  type TerminalRunState,
  type Usage,
} from "./types.ts";

/** What a tool factory gets: the run's identity and a fence to check before any write. */
export interface ToolContext {
  conversationId: string;
  runId: string;
  context: unknown;
  /** Throws `fence_lost` when this run is no longer owned by this worker. */
  assertOwned: () => Promise<void>;
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
  instructions?: (input: { conversationId: string; context: unknown; nowMs: number }) => string | undefined;
  tools?: (context: ToolContext) => ToolSet;
  /** Tools safe to run a second time when a crash cut a call short (default: none). */
  idempotent?: (toolName: string) => boolean;
  answerDelivery?: AnswerDeliveryFor;
  readUsage: UsageReader;
  modelCalls?: ModelCallObserver;
  emit: (event: RuntimeEvent) => void;
  nextSequence: (runId: string) => number;
}

/**
 * What the chat of `run`, ending in `state` with answer `text`, must show; null when the run
 * delivers nothing (it did not come from a channel). Pure: it runs before the terminal commit.
 */
export type AnswerDeliveryFor = (
  run: RunRecord,
  state: TerminalRunState,
  text: string,
) => AnswerDelivery | null;

/** How one execution of a run ended, from this worker's point of view. */
export type ExecutionEnd =
  | { kind: "terminal"; state: TerminalRunState; absorbed: string[] }
  /** Given back on shutdown; it resumes from its last completed step on the next start. */
  | { kind: "released" }
  /** Another owner took the run (our fence is stale); nothing was written. */
  | { kind: "lost" };

const STOP_STATES: Record<StopReason, TerminalRunState> = {
  interrupted: "interrupted",
  superseded: "superseded",
  timeout: "timeout",
  shutdown: "interrupted",
};

/**
 * The loop is ours: one model call per step, each step's messages and usage persisted (fenced)
 * before the next begins; every continuation decision is taken between steps where it is durable.
 */
export class RunExecutor {
  /** The conversation of each run this executor is executing, for tool events. */
  private readonly conversationOf = new Map<string, string>();

  constructor(private readonly options: ExecutorOptions) {}

  async execute(acquired: AcquiredRun, signal: AbortSignal): Promise<ExecutionEnd> {
    const { store, clock } = this.options;
    const fence = acquired.fence;
    const runId = fence.runId;
    this.conversationOf.set(runId, acquired.run.conversationId);
    let parts: MessagePart[] = [];
    let lost = false;
    // Built once per execution: tool schemas are costly to create and do not change between steps.
    let tools: PreparedTools | undefined;
    // Chosen once: a /model change while the run is in flight applies from the next run on.
    let models: readonly ModelEntry[] | undefined;
    const renew = setInterval(
      () => {
        void store.renewLease(fence, clock.now(), this.options.leaseMs).then(
          (held) => {
            if (!held) lost = true;
          },
          () => {},
        );
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
    try {
      for (;;) {
        const ctx = await store.loadPromptContext(runId, { maxTurns: this.options.maxHistoryTurns });
        const run = ctx.run;
        parts = [...(ctx.assistant?.parts ?? [])];
        if (lost || run.fencingToken !== fence.fencingToken) return { kind: "lost" };
        const requested = signal.aborted ? (signal.reason as StopReason) : null;
        if (requested === "shutdown") return await this.release(fence);
        if (run.state === "interrupt_requested" || requested) {
          return await this.finish(
            run,
            fence,
            STOP_STATES[run.stopReason ?? requested ?? "interrupted"],
            parts,
          );
        }
        if (run.steps >= this.options.maxSteps) {
          return await this.finish(
            run,
            fence,
            "policy_stop",
            parts,
            `step ceiling of ${this.options.maxSteps} reached`,
          );
        }
        tools ??= this.tools(run, fence);
        models ??= await this.modelsFor(run);
        const pending = unresolvedCalls(parts);
        if (pending.length > 0) {
          await this.resolveCalls(fence, parts, pending, tools);
          continue;
        }
        const policy = this.options.stopPolicies.find((p) => p.when({ run, parts, steps: run.steps }));
        if (policy) return await this.finish(run, fence, "policy_stop", parts, `stop policy ${policy.name}`);

        const alreadyJoined = new Set(parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : [])));
        const joinable = ctx.joinable.map((j) => j.message);
        const joined = joinable.filter((m) => !alreadyJoined.has(m.id));
        for (const message of joined) parts.push({ type: "joined-input", messageId: message.id });
        const current: Message[] = [
          ...ctx.inputs,
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
        const outcome = await runStep({
          conversationId: run.conversationId,
          runId,
          instructions: withSummary(
            this.options.instructions?.({
              conversationId: run.conversationId,
              context: run.context,
              nowMs: clock.now(),
            }),
            ctx.summary?.text,
          ),
          messages: buildPrompt(ctx.history, current, this.options.maxHistoryTokens),
          tools: tools?.offered,
          models,
          retry: this.options.retry,
          idleTimeoutMs: this.options.idleTimeoutMs,
          signal,
          clock,
          readUsage: this.options.readUsage,
          ...(this.options.modelCalls ? { modelCalls: this.options.modelCalls } : {}),
          emit: this.options.emit,
          nextSequence: () => this.options.nextSequence(runId),
        });
        if (outcome.kind === "stopped") {
          if (outcome.reason === "shutdown") return await this.release(fence);
          const stopped = await store.loadRun(runId);
          const reason = stopped?.run.stopReason ?? outcome.reason;
          return await this.finish(run, fence, STOP_STATES[reason], [...parts, ...outcome.partial]);
        }
        if (outcome.kind === "failed") {
          return await this.finish(run, fence, "failed", parts, outcome.error);
        }
        parts.push(...outcome.parts);
        await store.checkpoint({
          fence,
          assistantParts: parts,
          step: {
            step: run.steps,
            model: outcome.model,
            finishReason: outcome.finishReason,
            usage: outcome.usage satisfies Usage,
            startedAtMs: outcome.startedAtMs,
            finishedAtMs: clock.now(),
          },
          joinedInputIds: joined.map((m) => m.id),
          nowMs: clock.now(),
        });
        killPoint("step.persisted");
        if (outcome.finishReason !== "tool-calls") return await this.finish(run, fence, "completed", parts);
      }
    } catch (error) {
      if (isSwitchboardError(error, "fence_lost")) {
        this.options.logger.warn("run.fence_lost", { runId, fencingToken: fence.fencingToken });
        return { kind: "lost" };
      }
      throw error;
    } finally {
      clearInterval(renew);
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
  private tools(run: RunRecord, fence: Fence): PreparedTools | undefined {
    if (!this.options.tools) return undefined;
    const assertOwned = () => this.options.store.assertFence(fence);
    const tools = this.options.tools({
      conversationId: run.conversationId,
      runId: run.id,
      context: run.context,
      assertOwned,
    });
    const offered: ToolSet = {};
    const execute = new Map<string, ToolExecute>();
    for (const [name, definition] of Object.entries(tools)) {
      const { execute: run, ...rest } = definition;
      offered[name] = rest as typeof definition;
      if (run) {
        execute.set(name, async (input, toolCallId) => {
          await assertOwned();
          return run(input as never, { toolCallId, messages: [] } as never);
        });
      }
    }
    return { offered, execute };
  }

  /**
   * Runs the calls the last step made, in order, each marked started (a fenced save) before it
   * runs and saved with its result after. A call found started without a result was cut short
   * by a crash: `decidePending` says whether it runs again or is reported as unknown.
   */
  private async resolveCalls(
    fence: Fence,
    parts: MessagePart[],
    pending: ToolCallPart[],
    tools: PreparedTools | undefined,
  ): Promise<void> {
    const { store, clock, logger } = this.options;
    for (const call of pending) {
      const decision = decidePending(call, this.options.idempotent?.(call.toolName) ?? false);
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
      const result = await runTool(tools, call);
      parts.push({
        type: "tool-result",
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        ...result,
        finishedAtMs: clock.now(),
      });
      await store.saveToolProgress(fence, parts, clock.now());
      this.emitTool(fence.runId, call, result.isError ? "failed" : "completed");
    }
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
    run: RunRecord,
    fence: Fence,
    state: TerminalRunState,
    parts: MessagePart[],
    error?: string,
  ): Promise<ExecutionEnd> {
    // Joined inputs are absorbed only by a completed run; otherwise their own runs answer them,
    // so they must not also appear inside this turn.
    const assistantParts = withUnknownOutcomeNotices(
      state === "completed" ? parts : parts.filter((p) => p.type !== "joined-input"),
    );
    const delivery = this.options.answerDelivery?.(run, state, answerText(assistantParts)) ?? null;
    const result = await this.options.store.commitTerminal({
      fence,
      state,
      assistantParts,
      ...(error === undefined ? {} : { error }),
      ...(delivery ? { delivery } : {}),
      nowMs: this.options.clock.now(),
    });
    killPoint("run.terminal-committed");
    return { kind: "terminal", state, absorbed: result.absorbed };
  }

  private async release(fence: Fence): Promise<ExecutionEnd> {
    await this.options.store.releaseRun(fence, this.options.clock.now());
    return { kind: "released" };
  }
}

type ToolExecute = (input: unknown, toolCallId: string) => Promise<unknown>;

interface PreparedTools {
  offered: ToolSet;
  execute: Map<string, ToolExecute>;
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

/** The compaction summary travels with the instructions, ahead of the recent turns. */
function withSummary(instructions: string | undefined, summary: string | undefined): string | undefined {
  if (!summary) return instructions;
  const block = `Summary of the earlier conversation (older turns are not shown):\n${summary}`;
  return instructions ? `${instructions}\n\n${block}` : block;
}
