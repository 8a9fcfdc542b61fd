/**
 * A parent run that delegated, through the store's own procedures: `ag_done` delivered its result
 * after one step; `ag_busy` is still at work and started `ag_deep` (depth 2), still queued.
 */
import type { OperatorRuntimeStore } from "../../../src/operator/runtime-store.ts";

export interface ChildTree {
  conversationId: string;
  parentRunId: string;
  doneRunId: string;
  busyRunId: string;
  deepRunId: string;
  busyConversationId: string;
}

/** A Telegram DM's run context; a child's adds its link, as spawn_agent's does. */
function contextOf(child?: {
  handle: string;
  agent: string;
  depth: number;
  parentRunId: string;
  parentConversationId: string;
}) {
  return {
    channel: "telegram",
    account: "bot-1",
    target: "4242",
    surface: "dm",
    delivery: "terminal",
    conversationKey: "telegram:dm:4242",
    principal: { id: "4242", name: "Ada" },
    origin: "user",
    ...(child
      ? { child: { ...child, profile: child.agent === "self" ? null : child.agent, maxSteps: 4 } }
      : {}),
  };
}

export async function seedChildTree(
  store: OperatorRuntimeStore,
  nowMs: number,
  key = "telegram:dm:delegating",
): Promise<ChildTree> {
  const admitted = await store.admit({
    conversation: { key },
    idempotencyKey: `${key}:ask`,
    fingerprint: `${key}:ask`,
    parts: [{ type: "text", text: "research two things" }],
    context: null,
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: "run_treeparent", messageId: "msg_treeparent" },
    nowMs,
  });
  const lease = (id: string, atMs: number) =>
    store.acquireRun({ runId: id, owner: "seed", nowMs: atMs, leaseMs: 600_000 }).then((r) => r!);
  const spawn = (
    fence: { runId: string; fencingToken: number },
    parentConversationId: string,
    name: string,
    agent: string,
    depth: number,
    atMs: number,
  ) =>
    store.spawnChild({
      parentFence: fence,
      parentConversationId,
      toolCallId: `call_${name}`,
      handle: `ag_${name}`,
      agent,
      task: `task of ${name}`,
      wait: false,
      depth,
      maxRunning: 4,
      childContext: contextOf({
        handle: `ag_${name}`,
        agent,
        depth,
        parentRunId: fence.runId,
        parentConversationId,
      }),
      resultContext: contextOf(),
      proposedIds: {
        conversationId: `conv_child_${name}`,
        runId: `run_child_${name}`,
        messageId: `msg_child_${name}`,
      },
      nowMs: atMs,
    });
  const parent = await lease(admitted.runId, nowMs);
  await spawn(parent.fence, admitted.conversationId, "done", "researcher", 1, nowMs + 100);
  await spawn(parent.fence, admitted.conversationId, "busy", "scribe", 1, nowMs + 200);
  await store.commitTerminal({
    fence: parent.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: "Asked two helpers." }],
    nowMs: nowMs + 300,
  });
  const done = await lease("run_child_done", nowMs + 1000);
  await store.checkpoint({
    fence: done.fence,
    assistantParts: [{ type: "text", text: "found it" }],
    step: {
      step: 0,
      model: "fake:child",
      finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 2 },
      startedAtMs: nowMs + 1000,
      finishedAtMs: nowMs + 1500,
    },
    joinedInputIds: [],
    nowMs: nowMs + 1500,
  });
  await store.commitTerminal({
    fence: done.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: "found it" }],
    nowMs: nowMs + 2000,
  });
  const busy = await lease("run_child_busy", nowMs + 1100);
  await spawn(busy.fence, "conv_child_busy", "deep", "self", 2, nowMs + 1200);
  return {
    conversationId: admitted.conversationId,
    parentRunId: admitted.runId,
    doneRunId: "run_child_done",
    busyRunId: "run_child_busy",
    deepRunId: "run_child_deep",
    busyConversationId: "conv_child_busy",
  };
}
