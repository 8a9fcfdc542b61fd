/**
 * The child agents' part of the RuntimeStore contract (src/children/store.ts), run by
 * runStoreConformance on every engine: a spawn's receipt, the result going back in the child's
 * terminal commit, the limit, and stopping children with their parent.
 */
import { test as bunTest, expect } from "bun:test";
import type { SpawnRequest } from "../../src/children/store.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import { HEAD_CHARS } from "../../src/runtime/bounded-output.ts";
import type { AdmitRequest, Fence } from "../../src/runtime/store.ts";
import { isTerminalState } from "../../src/runtime/types.ts";

const T0 = 1_700_000_000_000;
const test = (name: string, fn: () => Promise<void>) => bunTest(name, fn, 20_000);
let counter = 0;

interface Deps {
  withStore(fn: (store: OperatorRuntimeStore) => Promise<void>): () => Promise<void>;
  admitRequest(conversationId: string, key: string, overrides?: Partial<AdmitRequest>): AdmitRequest;
}

export function childConformance({ withStore, admitRequest }: Deps): void {
  /** A running parent run in conversation `conversationId`. */
  const parent = async (store: OperatorRuntimeStore, conversationId: string) => {
    const admitted = await store.admit(admitRequest(conversationId, `ask-${++counter}`));
    const acquired = await store.acquireRun({
      runId: admitted.runId,
      owner: "w",
      nowMs: T0,
      leaseMs: 60_000,
    });
    if (!acquired) throw new Error("parent not acquired");
    return acquired.fence;
  };
  const spawn = (
    fence: Fence,
    conversationId: string,
    toolCallId: string,
    extra: Partial<SpawnRequest> = {},
  ) => {
    counter += 1;
    return {
      parentFence: fence,
      parentConversationId: conversationId,
      toolCallId,
      handle: `ag_${fence.runId}_${toolCallId}`,
      agent: "researcher",
      task: `find out ${toolCallId}`,
      wait: true,
      depth: 1,
      maxRunning: 4,
      childContext: { child: true },
      resultContext: { parent: conversationId },
      proposedIds: {
        conversationId: `child-conv-${counter}`,
        runId: `child-run-${counter}`,
        messageId: `child-msg-${counter}`,
      },
      nowMs: T0 + counter,
      ...extra,
    } satisfies SpawnRequest;
  };
  /** Takes the child's run and ends it `state` with `text`. */
  const finishChild = async (
    store: OperatorRuntimeStore,
    runId: string,
    text: string,
    state: "completed" | "interrupted" | "awaiting_approval" | "failed" = "completed",
  ) => {
    const acquired = await store.acquireRun({ runId, owner: "w", nowMs: T0, leaseMs: 60_000 });
    if (!acquired) throw new Error(`child run ${runId} not acquired`);
    return store.commitTerminal({
      fence: acquired.fence,
      state,
      assistantParts: [{ type: "text", text }],
      nowMs: T0 + 100,
    });
  };

  test(
    "children: a spawn is a receipt keyed by its call; a replay finds the same child and starts none",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const first = await store.spawnChild(spawn(fence, "p", "call-1"));
      expect(first.outcome).toBe("spawned");
      if (first.outcome === "refused") throw new Error("refused");
      expect(first.child).toMatchObject({
        agent: "researcher",
        state: "running",
        parentRunId: fence.runId,
        parentConversationId: "p",
        depth: 1,
        wait: true,
        run: { state: "queued", steps: 0 },
      });
      const runs = await store.listActiveRuns(first.child.conversationId);
      expect(runs.map((r) => r.id)).toEqual([first.child.runId]);
      expect(runs[0]?.context).toEqual({ child: true });
      // The replayed parent step proposes other ids: the receipt answers, nothing is written.
      const again = await store.spawnChild(spawn(fence, "p", "call-1"));
      expect(again).toMatchObject({
        outcome: "existing",
        child: { handle: first.child.handle, runId: first.child.runId },
      });
      expect(await store.listChildren({ parentConversationId: "p" })).toHaveLength(1);
      expect(await store.listChildren({ parentRunId: fence.runId })).toHaveLength(1);
      expect((await store.loadChild(first.child.handle))?.conversationId).toBe(first.child.conversationId);
      expect(await store.loadChild("ag_unknown")).toBeNull();
    }),
  );

  test(
    "children: a spawn by a stale owner of the parent is refused with fence_lost",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      await expect(
        store.spawnChild(spawn({ runId: fence.runId, fencingToken: fence.fencingToken + 1 }, "p", "call-1")),
      ).rejects.toMatchObject({ code: "fence_lost" });
      expect(await store.listChildren({ parentConversationId: "p" })).toHaveLength(0);
    }),
  );

  test(
    "children: over the running limit a new spawn is refused; a finished child makes room",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const first = await store.spawnChild(spawn(fence, "p", "call-1", { maxRunning: 1 }));
      const second = await store.spawnChild(spawn(fence, "p", "call-2", { maxRunning: 1 }));
      expect(second).toEqual({ outcome: "refused", reason: "too_many_running", running: 1 });
      // The replay of a recorded spawn answers whatever the limit says now.
      expect((await store.spawnChild(spawn(fence, "p", "call-1", { maxRunning: 1 }))).outcome).toBe(
        "existing",
      );
      if (first.outcome === "refused") throw new Error("refused");
      await finishChild(store, first.child.runId, "done");
      expect((await store.spawnChild(spawn(fence, "p", "call-2", { maxRunning: 1 }))).outcome).toBe(
        "spawned",
      );
    }),
  );

  test(
    "children: the child's terminal commit admits its result to the parent's conversation, once",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const spawned = await store.spawnChild(spawn(fence, "p", "call-1"));
      if (spawned.outcome === "refused") throw new Error("refused");
      // The parent hands over: its run completes while the child works.
      const parentEnd = await store.commitTerminal({
        fence,
        state: "completed",
        assistantParts: [{ type: "text", text: "" }],
        nowMs: T0 + 10,
      });
      expect(parentEnd).toMatchObject({ resumed: [], stopped: [] });
      const end = await finishChild(store, spawned.child.runId, "The answer is 42.");
      expect(end.resumed).toEqual(["p"]);
      const [resumed] = await store.listActiveRuns("p");
      expect(resumed?.context).toEqual({ parent: "p" });
      const prompt = await store.loadPromptContext(resumed!.id, { maxTurns: 5 });
      const text = prompt.inputs.flatMap((m) => m.parts).map((p) => (p.type === "text" ? p.text : ""));
      expect(text.join("")).toContain("The answer is 42.");
      expect(text.join("")).toContain(`child agent researcher (handle ${spawned.child.handle}), finished`);
      const child = await store.loadChild(spawned.child.handle);
      expect(child).toMatchObject({ state: "delivered", resultState: "completed", resultRunId: resumed!.id });
      expect(child?.finishedAtMs).toBe(T0 + 100);
      expect(child?.run).toMatchObject({ state: "completed", finishedAtMs: T0 + 100 });
    }),
  );

  test(
    "children: a child waiting for approval, or with input still queued, delivers when its last run ends",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const spawned = await store.spawnChild(spawn(fence, "p", "call-1"));
      if (spawned.outcome === "refused") throw new Error("refused");
      const asking = await finishChild(store, spawned.child.runId, "", "awaiting_approval");
      expect(asking.resumed).toEqual([]);
      const next = await store.admit(admitRequest(spawned.child.conversationId, "decision"));
      const more = await store.admit(admitRequest(spawned.child.conversationId, "more input"));
      expect((await finishChild(store, next.runId, "partial")).resumed).toEqual([]);
      expect((await store.loadChild(spawned.child.handle))?.state).toBe("running");
      expect((await finishChild(store, more.runId, "all of it")).resumed).toEqual(["p"]);
      expect((await store.loadChild(spawned.child.handle))?.state).toBe("delivered");
    }),
  );

  test(
    "children: a result too large for the prompt is cut, and read_output finds the rest in the parent's conversation",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const spawned = await store.spawnChild(spawn(fence, "p", "call-1"));
      if (spawned.outcome === "refused") throw new Error("refused");
      const long = `${"x".repeat(30_000)}END`;
      await finishChild(store, spawned.child.runId, long);
      const runs = await store.listActiveRuns("p");
      const resumed = runs.at(-1)!;
      const prompt = await store.loadPromptContext(resumed.id, { maxTurns: 5 });
      const input = prompt.inputs.flatMap((m) => m.parts).find((p) => p.type === "text");
      const shown = input?.type === "text" ? input.text : "";
      expect(shown.length).toBeLessThan(HEAD_CHARS + 400);
      const ref = /"(out_[^"]+)"/.exec(shown)?.[1];
      expect(ref).toBeDefined();
      const slice = await store.readToolOutput("p", ref!, { offset: 0, length: 50_000 });
      expect(slice?.text.endsWith("END")).toBe(true);
      expect(
        await store.readToolOutput(spawned.child.conversationId, ref!, { offset: 0, length: 10 }),
      ).toBeNull();
    }),
  );

  test(
    "children: a parent that ends interrupted stops its running children in its commit; they deliver nothing",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const running = await store.spawnChild(spawn(fence, "p", "call-1", { wait: false }));
      const queued = await store.spawnChild(spawn(fence, "p", "call-2", { wait: false }));
      if (running.outcome === "refused" || queued.outcome === "refused") throw new Error("refused");
      const child = await store.acquireRun({
        runId: running.child.runId,
        owner: "w",
        nowMs: T0,
        leaseMs: 60_000,
      });
      const end = await store.commitTerminal({
        fence,
        state: "interrupted",
        assistantParts: [],
        nowMs: T0 + 10,
      });
      expect(end.stopped).toEqual(
        expect.arrayContaining([
          { conversationId: running.child.conversationId, runId: running.child.runId },
          { conversationId: queued.child.conversationId, runId: queued.child.runId },
        ]),
      );
      expect((await store.loadRun(running.child.runId))?.run.state).toBe("interrupt_requested");
      // A child that never started ends at once (as a stop request ends any queued run).
      expect(isTerminalState((await store.loadRun(queued.child.runId))!.run.state)).toBe(true);
      const states = (await store.listChildren({ parentConversationId: "p" })).map((c) => c.state);
      expect(states).toEqual(["cancelled", "cancelled"]);
      const childEnd = await store.commitTerminal({
        fence: child!.fence,
        state: "interrupted",
        assistantParts: [{ type: "text", text: "half" }],
        nowMs: T0 + 20,
      });
      expect(childEnd.resumed).toEqual([]);
      expect(await store.listActiveRuns("p")).toEqual([]);
    }),
  );

  test(
    "children: stopping a conversation's children reaches their own children, and a completed parent keeps them",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const child = await store.spawnChild(spawn(fence, "p", "call-1"));
      if (child.outcome === "refused") throw new Error("refused");
      expect(
        (await store.commitTerminal({ fence, state: "completed", assistantParts: [], nowMs: T0 + 5 }))
          .stopped,
      ).toEqual([]);
      const childRun = await store.acquireRun({
        runId: child.child.runId,
        owner: "w",
        nowMs: T0,
        leaseMs: 60_000,
      });
      const grandchild = await store.spawnChild(
        spawn(childRun!.fence, child.child.conversationId, "call-g", { depth: 2 }),
      );
      if (grandchild.outcome === "refused") throw new Error("refused");
      const stopped = await store.cancelChildren({ parentConversationId: "p" }, T0 + 30);
      expect(stopped).toEqual([
        { conversationId: child.child.conversationId, runId: child.child.runId },
        { conversationId: grandchild.child.conversationId, runId: grandchild.child.runId },
      ]);
      expect((await store.loadChild(grandchild.child.handle))?.state).toBe("cancelled");
      expect(isTerminalState((await store.loadRun(grandchild.child.runId))!.run.state)).toBe(true);
      expect(await store.cancelChildren({ parentConversationId: "p" }, T0 + 40)).toEqual([]);
      expect(await store.listChildren({ parentConversationId: "p", state: "running" })).toEqual([]);
      expect(await store.listChildren({ parentConversationId: "p", state: "cancelled" })).toHaveLength(1);
    }),
  );

  test(
    "children: a child whose parent's conversation was purged settles without a result",
    withStore(async (store) => {
      const fence = await parent(store, "p");
      const spawned = await store.spawnChild(spawn(fence, "p", "call-1"));
      if (spawned.outcome === "refused") throw new Error("refused");
      await store.commitTerminal({ fence, state: "completed", assistantParts: [], nowMs: T0 + 5 });
      expect((await store.purgeConversation("p", { nowMs: T0 + 6 })).outcome).toBe("purged");
      const end = await finishChild(store, spawned.child.runId, "too late");
      expect(end.resumed).toEqual([]);
      const settled = await store.loadChild(spawned.child.handle);
      expect(settled).toMatchObject({ state: "cancelled", task: "" });
    }),
  );
}
