import type { RunState } from "../runtime/types.ts";

/**
 * Child agents' persistence: the link between a spawn and the run it started (a receipt keyed by
 * the spawning tool call), read by the children's tools and by operators. Both runtime stores
 * implement it; test/store/conformance.ts covers it on each engine. Every method is one
 * transaction; times are milliseconds from the caller.
 *
 * The rest of a child's life needs no method here: the child's terminal commit (T2) writes its
 * result as an input to the parent's conversation, and a parent run that ends stopped, replaced,
 * withdrawn, failed or timed out stops its running children in its own terminal commit
 * (src/store/child-rules.ts, stopsChildren).
 */
export interface ChildStore {
  /**
   * The receipt of a spawn, in one transaction fenced by the parent run: the child's link and the
   * admission of its task in a new conversation. A spawn already recorded for (parent run, tool
   * call) answers `existing` with that child and writes nothing, whatever the limits are now; a
   * new one over `maxRunning` running children of the parent's conversation answers `refused`.
   * Throws `fence_lost` when the parent run is no longer owned under `parentFence`.
   */
  spawnChild(request: SpawnRequest): Promise<SpawnResult>;

  /**
   * Stops running children (and theirs, recursively): each link becomes `cancelled`, so it will
   * deliver nothing; each active run of its conversation is asked to stop (a queued one ends at
   * once); its pending approvals are cancelled. Returns the runs asked to stop, for the caller to
   * abort where they execute. Empty when nothing was running.
   */
  cancelChildren(target: ChildTarget, nowMs: number): Promise<StoppedChildRun[]>;

  /** Children of a conversation or of a run, oldest first, at most `limit` (default 100). */
  listChildren(filter: ChildFilter): Promise<ChildRecord[]>;

  /** One child by handle; null when unknown. */
  loadChild(handle: string): Promise<ChildRecord | null>;
}

/** A link's own state: `running` until its result is delivered or it is stopped. */
export type ChildState = "running" | "delivered" | "cancelled";

export interface ChildRecord {
  /** The handle the model uses (`ag_…`), derived from the spawning call, so a replay finds it. */
  handle: string;
  /** The entry name of `agents` it was started as (`self` resolved to the caller's). */
  agent: string;
  task: string;
  wait: boolean;
  /** 1 for a child of a top-level run, 2 for its child. */
  depth: number;
  parentRunId: string;
  parentConversationId: string;
  toolCallId: string;
  /** The child's own conversation. */
  conversationId: string;
  /** The run its task was admitted to. */
  runId: string;
  state: ChildState;
  /** The latest run of the child's conversation: its state, steps and times. */
  run: {
    id: string;
    state: RunState;
    steps: number;
    startedAtMs: number | null;
    finishedAtMs: number | null;
  };
  /** The terminal state of the run whose answer was delivered; null until then. */
  resultState: string | null;
  /** The parent-conversation run the result was admitted to; null until delivered. */
  resultRunId: string | null;
  createdAtMs: number;
  finishedAtMs: number | null;
}

export interface SpawnRequest {
  parentFence: { runId: string; fencingToken: number };
  parentConversationId: string;
  toolCallId: string;
  handle: string;
  agent: string;
  task: string;
  wait: boolean;
  depth: number;
  /** Running children of the parent's conversation at most (SWITCHBOARD_CONFIG agentLimits). */
  maxRunning: number;
  /** The child run's context (where it reports, who started it, its limits). */
  childContext: unknown;
  /** The context the result's input to the parent is admitted with (the parent run's). */
  resultContext: unknown;
  proposedIds: { conversationId: string; runId: string; messageId: string };
  nowMs: number;
}

export type SpawnResult =
  | { outcome: "spawned" | "existing"; child: ChildRecord }
  | { outcome: "refused"; reason: "too_many_running"; running: number };

/** Which running children: one by handle, a run's, or every one of a conversation's runs. */
export type ChildTarget = { handle: string } | { parentRunId: string } | { parentConversationId: string };

export type ChildFilter = ({ parentConversationId: string } | { parentRunId: string }) & {
  state?: ChildState;
  limit?: number;
};

export interface StoppedChildRun {
  conversationId: string;
  runId: string;
}
