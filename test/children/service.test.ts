/**
 * The child agents' decisions (src/children/service.ts) on a real SQLite store: which spawns are
 * refused and how the model is told, what a child inherits and is clamped to, and that a handle
 * reaches only its own conversation's child. The runtime is a recorder: waking and aborting are
 * the runtime's own tests' business.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import type { AgentEntry } from "../../src/children/config.ts";
import { childSteps } from "../../src/children/limits.ts";
import {
  ChildRefusal,
  type ChildRuntime,
  childHandle,
  createChildAgents,
} from "../../src/children/service.ts";
import type { RunContext } from "../../src/run-context.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { silentLogger } from "../../src/util/log.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { tempDir } from "../support/runtime.ts";

const T0 = 1_700_000_000_000;
const context: RunContext = {
  channel: "telegram",
  account: "bot",
  target: "42",
  surface: "dm",
  delivery: "stream",
  conversationKey: "telegram:bot:42",
  principal: { id: "42", name: "Alice" },
  origin: "user",
};

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

function setup(
  options: { agents?: Record<string, AgentEntry>; budget?: string | null; maxDepth?: number } = {},
) {
  const dir = tempDir("switchboard-children-");
  const stores: SqliteStores = openSqliteStores(join(dir.path, "db.sqlite"));
  cleanup.push(() => {
    stores.close();
    dir.cleanup();
  });
  const woken: string[] = [];
  const budget = { refusal: options.budget ?? null };
  const runtime: ChildRuntime = {
    resume: (conversationId) => woken.push(conversationId),
    abortLocal: () => {},
    submit: (request) => ({
      admission: stores.runtime.admit({
        conversation: { id: request.conversationId },
        idempotencyKey: request.idempotencyKey,
        fingerprint: request.idempotencyKey,
        parts: request.parts,
        context: request.context,
        policy: request.policy,
        coalescePending: false,
        proposedIds: { runId: `run-${request.idempotencyKey}`, messageId: `msg-${request.idempotencyKey}` },
        nowMs: T0,
      }),
    }),
  };
  const children = createChildAgents({
    store: stores.runtime,
    runtime,
    agents: options.agents ?? { researcher: { maxSteps: 20, tools: ["web"] } },
    limits: { maxDepth: options.maxDepth ?? 2, maxRunningPerConversation: 4 },
    topLevelMaxSteps: 8,
    agentFor: (dir) => ({ dir, version: "v1" }),
    budgetRefusal: async () => budget.refusal,
    clock: new FakeClock(T0),
    logger: silentLogger,
  });
  /** An owned parent run in `conversationId` with `steps` steps taken. */
  const caller = async (conversationId: string, steps: number, ctx: RunContext = context) => {
    const admitted = await stores.runtime.admit({
      conversation: { id: conversationId },
      idempotencyKey: `ask-${conversationId}-${steps}`,
      fingerprint: "f",
      parts: [{ type: "text", text: "hi" }],
      context: ctx,
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `run-${conversationId}-${steps}`, messageId: `msg-${conversationId}-${steps}` },
      nowMs: T0,
    });
    const acquired = (await stores.runtime.acquireRun({
      runId: admitted.runId,
      owner: "w",
      nowMs: T0,
      leaseMs: 60_000,
    }))!;
    for (let n = 0; n < steps; n++) {
      await stores.runtime.checkpoint({
        fence: acquired.fence,
        assistantParts: [],
        step: {
          step: n,
          model: "m",
          finishReason: "tool-calls",
          usage: {},
          startedAtMs: T0,
          finishedAtMs: T0,
        },
        joinedInputIds: [],
        nowMs: T0,
      });
    }
    return {
      conversationId,
      runId: admitted.runId,
      fencingToken: acquired.fence.fencingToken,
      context: ctx,
      toolCallId: "call-1",
    };
  };
  return { stores, children, caller, woken, budget };
}

test("a spawn inherits its caller's chat and person, delivers nothing itself, and is clamped to the steps left", async () => {
  const { stores, children, caller, woken, budget } = setup();
  const parent = await caller("c", 3);
  const output = await children.spawn(parent, { agent: "researcher", task: "look", wait: true });
  expect(output).toMatchObject({
    handle: childHandle(parent.runId, "call-1"),
    agent: "researcher",
    waiting: true,
  });
  const [child] = await stores.runtime.listChildren({ parentConversationId: "c" });
  const run = (await stores.runtime.loadRun(child!.runId))!.run;
  expect(run.context).toMatchObject({
    ...context,
    delivery: "terminal",
    child: { agent: "researcher", profile: "researcher", depth: 1, parentRunId: parent.runId, maxSteps: 5 },
  });
  expect(woken).toEqual([child!.conversationId]);
  // The same call again (a replayed step), even with the budget spent since: the same child,
  // woken again, nothing new, no refusal.
  budget.refusal = "Your daily budget is spent.";
  expect((await children.spawn(parent, { agent: "researcher", task: "look", wait: true })).handle).toBe(
    output.handle,
  );
  expect(woken).toEqual([child!.conversationId, child!.conversationId]);
  expect(await stores.runtime.listChildren({ parentConversationId: "c" })).toHaveLength(1);
});

test("refusals the model reads: an unknown agent, too deep, no steps left, no budget left", async () => {
  const spawnIn = async (
    options: Parameters<typeof setup>[0],
    steps: number,
    agent: string,
    ctx = context,
  ) => {
    const { children, caller } = setup(options);
    return children.spawn(await caller("c", steps, ctx), { agent, task: "t", wait: false });
  };
  await expect(spawnIn({}, 0, "writer")).rejects.toThrow(
    'There is no agent "writer"; use one of researcher, self.',
  );
  const child = {
    ...context,
    child: {
      handle: "ag_1",
      agent: "researcher",
      profile: "researcher",
      depth: 1,
      parentRunId: "p",
      parentConversationId: "pc",
      maxSteps: 6,
    },
  };
  await expect(spawnIn({ maxDepth: 1 }, 0, "self", child)).rejects.toThrow("nest at most 1 deep");
  await expect(spawnIn({}, 6, "self", child)).rejects.toThrow("no steps left");
  await expect(spawnIn({ budget: "Your daily budget is spent." }, 0, "researcher")).rejects.toThrow(
    "Spawn refused: Your daily budget is spent.",
  );
  await expect(spawnIn({}, 0, "writer")).rejects.toBeInstanceOf(ChildRefusal);
});

test("self copies its caller's entry one level deeper", async () => {
  const { stores, children, caller } = setup();
  const child = {
    ...context,
    child: {
      handle: "ag_1",
      agent: "researcher",
      profile: "researcher",
      depth: 1,
      parentRunId: "p",
      parentConversationId: "pc",
      maxSteps: 6,
    },
  };
  await children.spawn(await caller("c", 1, child), { agent: "self", task: "t", wait: false });
  const [grandchild] = await stores.runtime.listChildren({ parentConversationId: "c" });
  expect(grandchild).toMatchObject({ agent: "researcher", depth: 2 });
  const run = (await stores.runtime.loadRun(grandchild!.runId))!.run;
  expect(run.context).toMatchObject({ child: { profile: "researcher", depth: 2, maxSteps: 5 } });
});

test("a handle reaches only its own conversation's child; a finished or stopped child takes no input", async () => {
  const { children, caller } = setup();
  const parent = await caller("c", 0);
  const { handle } = await children.spawn(parent, { agent: "researcher", task: "t", wait: false });
  const stranger = await caller("other", 0);
  await expect(children.message(stranger, { handle, text: "hi" })).rejects.toThrow(
    `No child agent ${handle}`,
  );
  await expect(children.stop(stranger, { handle })).rejects.toThrow(`No child agent ${handle}`);
  expect(await children.message({ ...parent, toolCallId: "call-2" }, { handle, text: "more" })).toBe(
    `Sent to ${handle}.`,
  );
  expect(await children.list("c")).toEqual([
    expect.objectContaining({ handle, agent: "researcher", state: "queued" }),
  ]);
  expect(await children.stop({ ...parent, toolCallId: "call-3" }, { handle })).toContain(`Stopped ${handle}`);
  await expect(
    children.message({ ...parent, toolCallId: "call-4" }, { handle, text: "more" }),
  ).rejects.toThrow("been stopped");
  expect((await children.list("c"))[0]?.state).toBe("stopped");
});

test("childSteps: the entry's ceiling (8 by default), never more than the parent has left", () => {
  expect(childSteps({ parentMaxSteps: 8, parentStepsUsed: 1, requested: 20 })).toBe(7);
  expect(childSteps({ parentMaxSteps: 8, parentStepsUsed: 1, requested: 3 })).toBe(3);
  expect(childSteps({ parentMaxSteps: 20, parentStepsUsed: 1, requested: undefined })).toBe(8);
  expect(childSteps({ parentMaxSteps: 8, parentStepsUsed: 9, requested: 3 })).toBe(0);
});
