/**
 * An operator's purge of a conversation whose runs started child agents: the children still at
 * work stop and deliver nothing, and every child's conversation (what was delegated) is purged
 * with it.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { createOperatorService } from "../../src/operator/service.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { tempDir } from "../support/runtime.ts";

const T0 = 1_700_000_000_000;
let stores: SqliteStores;
let dir: ReturnType<typeof tempDir>;
afterEach(() => {
  stores.close();
  dir.cleanup();
});

test("purging a parent conversation stops its children and purges their conversations", async () => {
  dir = tempDir("switchboard-purge-children-");
  stores = openSqliteStores(join(dir.path, "db.sqlite"));
  const clock = new FakeClock(T0, { instantSleeps: true });
  const store = stores.runtime;
  const admitted = await store.admit({
    conversation: { key: "telegram:bot:1" },
    idempotencyKey: "ask",
    fingerprint: "f",
    parts: [{ type: "text", text: "research two things" }],
    context: null,
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: "run-parent", messageId: "msg-parent" },
    nowMs: T0,
  });
  const parent = (await store.acquireRun({ runId: admitted.runId, owner: "w", nowMs: T0, leaseMs: 60_000 }))!;
  const spawn = (n: number) =>
    store.spawnChild({
      parentFence: parent.fence,
      parentConversationId: admitted.conversationId,
      toolCallId: `call-${n}`,
      handle: `ag_${n}`,
      agent: "researcher",
      task: `SECRET task ${n}`,
      wait: false,
      depth: 1,
      maxRunning: 4,
      childContext: null,
      resultContext: null,
      proposedIds: { conversationId: `child-${n}`, runId: `child-run-${n}`, messageId: `child-msg-${n}` },
      nowMs: T0,
    });
  await spawn(1);
  await spawn(2);
  await store.commitTerminal({ fence: parent.fence, state: "completed", assistantParts: [], nowMs: T0 + 1 });
  // The first child finished and delivered; the second is still at work.
  const first = (await store.acquireRun({ runId: "child-run-1", owner: "w", nowMs: T0, leaseMs: 60_000 }))!;
  await store.commitTerminal({
    fence: first.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: "found it" }],
    nowMs: T0 + 2,
  });
  await store.acquireRun({ runId: "child-run-2", owner: "w", nowMs: T0, leaseMs: 60_000 });

  const operator = createOperatorService({
    stores,
    clock,
    // As the running gateway's runtime would: a queued run ends at once, a running one at its step.
    stopRun: async (_conversationId, runId) => {
      const outcome = await store.requestStop(runId, "superseded", clock.now());
      if (outcome.outcome !== "requested") return;
      const run = (await store.loadRun(runId))!.run;
      await store.commitTerminal({
        fence: { runId, fencingToken: run.fencingToken },
        state: "interrupted",
        assistantParts: [],
        nowMs: clock.now(),
      });
    },
  });
  const result = await operator.conversations.purge(admitted.conversationId, "operator:alice");
  expect(result.outcome).toBe("purged");
  expect(await store.loadPurge("child-1")).not.toBeNull();
  expect(await store.loadPurge("child-2")).not.toBeNull();
  const children = await store.listChildren({ parentConversationId: admitted.conversationId });
  expect(children.map((c) => [c.handle, c.state, c.task])).toEqual([
    ["ag_1", "delivered", ""],
    ["ag_2", "cancelled", ""],
  ]);
});
