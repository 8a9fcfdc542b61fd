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
  answerText,
  type Message,
  type MessagePart,
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
  retry: RetryPolicy;
  maxSteps: number;
  idleTimeoutMs: number;
  leaseMs: number;
  maxHistoryTurns: number;
  maxHistoryTokens: number;
  stopPolicies: readonly StopPolicy[];
  instructions?: (input: { conversationId: string; context: unknown; nowMs: number }) => string | undefined;
  tools?: (context: ToolContext) => ToolSet;
  answerDelivery?: AnswerDeliveryFor;
  readUsage: UsageReader;
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
  constructor(private readonly options: ExecutorOptions) {}

  async execute(acquired: AcquiredRun, signal: AbortSignal): Promise<ExecutionEnd> {
    const { store, clock } = this.options;
    const fence = acquired.fence;
    const runId = fence.runId;
    let parts: MessagePart[] = [];
    let lost = false;
    // Built once per execution: tool schemas are costly to create and do not change between steps.
    let tools: ToolSet | undefined;
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
        tools ??= this.tools(run, fence);
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
          tools,
          models: this.options.models,
          retry: this.options.retry,
          idleTimeoutMs: this.options.idleTimeoutMs,
          signal,
          clock,
          readUsage: this.options.readUsage,
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
    }
  }

  private tools(run: RunRecord, fence: Fence): ToolSet | undefined {
    if (!this.options.tools) return undefined;
    const assertOwned = () => this.options.store.assertFence(fence);
    const tools = this.options.tools({
      conversationId: run.conversationId,
      runId: run.id,
      context: run.context,
      assertOwned,
    });
    const fencedTools: ToolSet = {};
    for (const [name, definition] of Object.entries(tools)) {
      const execute = definition.execute;
      fencedTools[name] = execute
        ? ({
            ...definition,
            execute: async (input: unknown, options: never) => {
              await assertOwned();
              return execute(input as never, options);
            },
          } as typeof definition)
        : definition;
    }
    return fencedTools;
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
    const assistantParts = state === "completed" ? parts : parts.filter((p) => p.type !== "joined-input");
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

/** The compaction summary travels with the instructions, ahead of the recent turns. */
function withSummary(instructions: string | undefined, summary: string | undefined): string | undefined {
  if (!summary) return instructions;
  const block = `Summary of the earlier conversation (older turns are not shown):\n${summary}`;
  return instructions ? `${instructions}\n\n${block}` : block;
}
