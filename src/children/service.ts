/**
 * Child agents: what spawn_agent, list_agents, message_agent and stop_agent do, and the cascade
 * of /stop, /new and /forget. A child is a run in its own conversation, admitted with a receipt
 * keyed by the spawning tool call (ChildStore.spawnChild); its result comes back to the parent in
 * its own terminal commit (src/store/children.ts). This module decides, names the refusals the
 * model sees, and wakes the runtime; it holds no state of its own.
 */
import { createHash } from "node:crypto";
import type { RunContext } from "../run-context.ts";
import type { InputPolicy } from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import type { Logger } from "../util/log.ts";
import type { AgentEntry, AgentLimits } from "./config.ts";
import { childSteps } from "./limits.ts";
import type { ChildRecord, ChildStore, StoppedChildRun } from "./store.ts";
import { delegatedConversations } from "./tree.ts";

/** A refusal the model reads as the tool's error: what went wrong and what it can do instead. */
export class ChildRefusal extends Error {
  override readonly name = "ChildRefusal";
}

/** The run calling a tool, as the children's tools see it. */
export interface Caller {
  conversationId: string;
  runId: string;
  fencingToken: number;
  context: RunContext;
  toolCallId: string;
}

/** What the runtime does for the children: wake a conversation, abort a run here, admit an input. */
export interface ChildRuntime {
  resume(conversationId: string): void;
  abortLocal(conversationId: string, runId: string): void;
  submit(request: {
    conversationId: string;
    idempotencyKey: string;
    parts: Array<{ type: "text"; text: string }>;
    context: unknown;
    policy: InputPolicy;
  }): { admission: Promise<{ runId: string }> };
}

export interface ChildAgentsOptions {
  store: ChildStore & {
    loadRun(runId: string): Promise<{ run: { steps: number; context: unknown } } | null>;
  };
  runtime: ChildRuntime;
  /** SWITCHBOARD_CONFIG `agents` (agentDir made absolute). */
  agents: Readonly<Record<string, AgentEntry>>;
  limits: AgentLimits;
  /** The step ceiling of a run that is not a child's (the runtime's). */
  topLevelMaxSteps: number;
  /** The generation of an agent directory a new child is pinned to (as a surface's new runs are). */
  agentFor(agentDir: string): RunContext["agent"];
  /** The refusal text when the caller's person has no budget left; null when they have. */
  budgetRefusal?(context: RunContext): Promise<string | null>;
  clock: Clock;
  logger: Logger;
}

/** What spawn_agent answers the model. */
export interface SpawnOutput {
  handle: string;
  agent: string;
  status: "running" | "finished" | "stopped";
  /** True when the caller's turn ends here and resumes with the child's result. */
  waiting: boolean;
  note: string;
}

/** The display of one child in list_agents. */
export interface ChildListing {
  handle: string;
  agent: string;
  task: string;
  state: string;
  steps: number;
  startedAt: string;
  finishedAt: string | null;
}

export interface ChildAgents {
  /** Entry names the model may pass to spawn_agent, besides `self`. */
  readonly names: readonly string[];
  spawn(caller: Caller, input: { agent: string; task: string; wait: boolean }): Promise<SpawnOutput>;
  list(conversationId: string): Promise<ChildListing[]>;
  message(caller: Caller, input: { handle: string; text: string }): Promise<string>;
  stop(caller: Caller, input: { handle: string }): Promise<string>;
  /** The conversation's children still at work, oldest first (/status); empty when none. */
  running(conversationId: string): Promise<ChildRecord[]>;
  /** Stops every running child of the conversation's runs (/stop, /new, /forget); how many runs. */
  stopAll(conversationId: string): Promise<number>;
  /** The conversations of the conversation's children and theirs, nearest first (/forget purges them too). */
  descendants(conversationId: string): Promise<string[]>;
}

/** The handle of the child a tool call starts: the same call always names the same child. */
export function childHandle(parentRunId: string, toolCallId: string): string {
  return `ag_${createHash("sha256").update(`${parentRunId}\n${toolCallId}`).digest("hex").slice(0, 12)}`;
}

/** What spawn_agent answers for `child`, new or found by its receipt. */
function spawned(child: ChildRecord, wait: boolean): SpawnOutput {
  const status = child.state === "running" ? "running" : child.state === "delivered" ? "finished" : "stopped";
  return {
    handle: child.handle,
    agent: child.agent,
    status,
    waiting: wait && child.state !== "cancelled",
    note: wait
      ? "Your turn ends here; you will continue when its result arrives as a new message."
      : "It works in the background; its result will arrive later as a new message. Carry on.",
  };
}

export function createChildAgents(options: ChildAgentsOptions): ChildAgents {
  const { store, runtime, agents, limits, clock, logger } = options;
  const names = Object.keys(agents);

  const abort = (stopped: readonly StoppedChildRun[]) => {
    for (const run of stopped) runtime.abortLocal(run.conversationId, run.runId);
  };

  /** A child of the caller's conversation, or a refusal naming the handles it has. */
  const own = async (caller: Caller, handle: string): Promise<ChildRecord> => {
    const child = await store.loadChild(handle);
    if (child && child.parentConversationId === caller.conversationId) return child;
    const known = (await store.listChildren({ parentConversationId: caller.conversationId })).map(
      (c) => c.handle,
    );
    throw new ChildRefusal(
      `No child agent ${handle} in this conversation${known.length > 0 ? `; its children are ${known.join(", ")}` : ""} (list_agents shows them).`,
    );
  };

  return {
    names,

    async spawn(caller, input) {
      const { context } = caller;
      const handle = childHandle(caller.runId, caller.toolCallId);
      // A replayed call finds its receipt before any limit is read again: the child it started
      // counts now, and may have spent the budget the check would read.
      const recorded = await store.loadChild(handle);
      if (recorded && recorded.parentRunId === caller.runId) {
        runtime.resume(recorded.conversationId);
        return spawned(recorded, input.wait);
      }
      const profile = input.agent === "self" ? (context.child?.profile ?? null) : input.agent;
      const entry = profile === null ? undefined : agents[profile];
      if (profile !== null && !entry)
        throw new ChildRefusal(
          `There is no agent "${input.agent}"; use one of ${[...names, "self"].join(", ")}.`,
        );
      const depth = (context.child?.depth ?? 0) + 1;
      if (depth > limits.maxDepth)
        throw new ChildRefusal(
          `Spawn refused: child agents nest at most ${limits.maxDepth} deep and this run is at depth ${depth - 1}; do the task yourself.`,
        );
      const parent = await store.loadRun(caller.runId);
      const steps = childSteps({
        parentMaxSteps: context.child?.maxSteps ?? options.topLevelMaxSteps,
        parentStepsUsed: parent?.run.steps ?? 0,
        requested: entry?.maxSteps,
      });
      if (steps < 1)
        throw new ChildRefusal(
          "Spawn refused: this run has no steps left to lend a child agent; answer with what you have.",
        );
      const refusal = (await options.budgetRefusal?.(context)) ?? null;
      if (refusal) throw new ChildRefusal(`Spawn refused: ${refusal}`);
      const agent = profile ?? "self";
      const nowMs = clock.now();
      const { child: _, delivery: __, nativeStreaming: ___, ...inherited } = context;
      const pinned = entry?.agentDir ? options.agentFor(entry.agentDir) : context.agent;
      const childContext: RunContext = {
        ...inherited,
        // A child's answer goes to its parent, not to the chat: nothing of it streams there.
        delivery: "terminal",
        ...(pinned ? { agent: pinned } : {}),
        child: {
          handle,
          agent,
          profile,
          depth,
          parentRunId: caller.runId,
          parentConversationId: caller.conversationId,
          maxSteps: steps,
        },
      };
      if (!pinned) delete childContext.agent;
      const result = await store.spawnChild({
        parentFence: { runId: caller.runId, fencingToken: caller.fencingToken },
        parentConversationId: caller.conversationId,
        toolCallId: caller.toolCallId,
        handle,
        agent,
        task: input.task,
        wait: input.wait,
        depth,
        maxRunning: limits.maxRunningPerConversation,
        childContext,
        resultContext: context,
        proposedIds: {
          conversationId: newId("conv", nowMs),
          runId: newId("run", nowMs),
          messageId: newId("msg", nowMs),
        },
        nowMs,
      });
      if (result.outcome === "refused")
        throw new ChildRefusal(
          `Spawn refused: ${result.running} child agents are running in this conversation (at most ${limits.maxRunningPerConversation}); wait for one to finish, or stop one with stop_agent (list_agents shows them).`,
        );
      const child = result.child;
      logger.info(result.outcome === "spawned" ? "child.spawned" : "child.spawn_replayed", {
        handle,
        agent,
        parentRunId: caller.runId,
        childRunId: child.runId,
        depth,
        maxSteps: steps,
        wait: input.wait,
      });
      runtime.resume(child.conversationId);
      return spawned(child, input.wait);
    },

    async list(conversationId) {
      const children = await store.listChildren({ parentConversationId: conversationId });
      return children.map((child) => ({
        handle: child.handle,
        agent: child.agent,
        task: child.task.length > 200 ? `${child.task.slice(0, 197)}...` : child.task,
        state:
          child.state === "running"
            ? child.run.state
            : child.state === "delivered"
              ? `finished (${child.resultState})`
              : "stopped",
        steps: child.run.steps,
        startedAt: new Date(child.createdAtMs).toISOString(),
        finishedAt: child.finishedAtMs === null ? null : new Date(child.finishedAtMs).toISOString(),
      }));
    },

    async message(caller, input) {
      const child = await own(caller, input.handle);
      if (child.state !== "running")
        throw new ChildRefusal(
          `Child agent ${child.handle} has ${child.state === "delivered" ? "finished; its result is in this conversation" : "been stopped"}; spawn a new one for more work.`,
        );
      const first = await store.loadRun(child.runId);
      const entry = child.agent === "self" ? undefined : agents[child.agent];
      const ticket = runtime.submit({
        conversationId: child.conversationId,
        idempotencyKey: `message:${caller.runId}:${caller.toolCallId}`,
        parts: [{ type: "text", text: input.text }],
        context: first?.run.context ?? null,
        policy: entry?.inputPolicy ?? "queue",
      });
      await ticket.admission;
      return `Sent to ${child.handle}.`;
    },

    async stop(caller, input) {
      const child = await own(caller, input.handle);
      if (child.state !== "running")
        return `Child agent ${child.handle} is not running (${child.state === "delivered" ? "finished" : "stopped"}).`;
      const stopped = await store.cancelChildren({ handle: child.handle }, clock.now());
      abort(stopped);
      logger.info("child.stopped", { handle: child.handle, by: caller.runId, runs: stopped.length });
      return `Stopped ${child.handle}; it will deliver no result.`;
    },

    descendants: (conversationId) => delegatedConversations(store, conversationId),

    running: (conversationId) =>
      store.listChildren({ parentConversationId: conversationId, state: "running" }),

    async stopAll(conversationId) {
      const stopped = await store.cancelChildren({ parentConversationId: conversationId }, clock.now());
      abort(stopped);
      if (stopped.length > 0) logger.info("child.stopped_all", { conversationId, runs: stopped.length });
      return stopped.length;
    },
  };
}
