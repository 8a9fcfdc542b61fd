/**
 * The contract every RuntimeStore backend must honour. Run it against a backend with
 * `runStoreConformance(name, open)`; `open` returns a fresh, empty store.
 */
import { describe, expect, test } from "bun:test";
import type { AdmitRequest, RuntimeStore } from "../../src/runtime/store.ts";
import type { InputPolicy } from "../../src/runtime/types.ts";

let counter = 0;
const T0 = 1_700_000_000_000;

/** A queued text admission; every call proposes fresh run and message ids. */
export function admitRequest(
  conversationId: string,
  key: string,
  overrides: Partial<AdmitRequest> = {},
): AdmitRequest {
  counter += 1;
  return {
    conversation: { id: conversationId },
    idempotencyKey: key,
    fingerprint: `fp-${key}`,
    parts: [{ type: "text", text: key }],
    context: { test: true },
    policy: "queue" as InputPolicy,
    coalescePending: false,
    proposedIds: { runId: `run-${counter}`, messageId: `msg-${counter}` },
    nowMs: T0 + counter,
    ...overrides,
  };
}

const step = (n: number) => ({
  step: n,
  model: "m",
  finishReason: "stop",
  usage: { inputTokens: 1, outputTokens: 1 },
  startedAtMs: T0,
  finishedAtMs: T0,
});

export function runStoreConformance(
  name: string,
  open: () => Promise<{ store: RuntimeStore; close: () => Promise<void> }>,
) {
  describe(`RuntimeStore conformance: ${name}`, () => {
    const withStore = (fn: (store: RuntimeStore) => Promise<void>) => async () => {
      const { store, close } = await open();
      try {
        await fn(store);
      } finally {
        await close();
      }
    };

    test(
      "duplicate admission returns the original run",
      withStore(async (store) => {
        const first = await store.admit(admitRequest("c", "k1"));
        const again = await store.admit({ ...admitRequest("c", "k1"), fingerprint: "fp-k1" });
        expect(first.outcome).toBe("admitted");
        expect(again).toMatchObject({
          outcome: "duplicate",
          runId: first.runId,
          inputMessageId: first.inputMessageId,
        });
        expect((await store.listActiveRuns("c")).length).toBe(1);
      }),
    );

    test(
      "admissions arriving together: a refused one leaves nothing, the others all commit",
      withStore(async (store) => {
        await store.admit(admitRequest("c", "k1"));
        const outcomes = await Promise.allSettled([
          store.admit(admitRequest("c", "k2")),
          store.admit({ ...admitRequest("c", "k1"), fingerprint: "changed" }),
          store.admit(admitRequest("d", "k1")),
          store.admit(admitRequest("c", "k3")),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
        expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "idempotency_conflict" });
        const runs = await store.listActiveRuns("c");
        expect(runs.length).toBe(3);
        expect((await store.listActiveRuns("d")).length).toBe(1);
        const events = await store.readEvents("c", 0, 100);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
      }),
    );

    test(
      "ingress key dedupes across conversations and restarts",
      withStore(async (store) => {
        const ingress = { source: "telegram:bot", key: "update:1", payload: {} };
        const first = await store.admit(admitRequest("c", "k1", { ingress }));
        const again = await store.admit(admitRequest("other", "k-other", { ingress }));
        expect(again).toMatchObject({ outcome: "duplicate", runId: first.runId });
        expect((await store.listActiveRuns("other")).length).toBe(0);
      }),
    );

    test(
      "conflicting key reuse is a typed conflict and changes nothing",
      withStore(async (store) => {
        await store.admit(admitRequest("c", "k1"));
        const head = await store.loadConversation("c");
        await expect(
          store.admit({ ...admitRequest("c", "k1"), fingerprint: "different" }),
        ).rejects.toMatchObject({
          code: "idempotency_conflict",
        });
        expect((await store.loadConversation("c"))?.version).toBe(head?.version);
      }),
    );

    test(
      "coalescing appends to the one pending successor",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        await store.acquireRun({ runId: a.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
        const b = await store.admit(admitRequest("c", "b", { coalescePending: true }));
        const c = await store.admit(admitRequest("c", "c", { coalescePending: true }));
        expect(b.outcome).toBe("admitted");
        expect(c).toMatchObject({ outcome: "coalesced", runId: b.runId });
        const view = await store.loadRun(b.runId);
        expect(view?.run.inputMessageIds.length).toBe(2);
      }),
    );

    test(
      "a stale checkpoint is refused after another owner acquired",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        const first = await store.acquireRun({ runId: a.runId, owner: "w1", nowMs: T0, leaseMs: 100 });
        expect(first).not.toBeNull();
        expect(
          await store.acquireRun({ runId: a.runId, owner: "w2", nowMs: T0 + 50, leaseMs: 100 }),
        ).toBeNull();
        const second = await store.acquireRun({ runId: a.runId, owner: "w2", nowMs: T0 + 200, leaseMs: 100 });
        expect(second?.fence.fencingToken).toBe(first!.fence.fencingToken + 1);
        await expect(
          store.checkpoint({
            fence: first!.fence,
            assistantParts: [],
            step: step(0),
            joinedInputIds: [],
            nowMs: T0,
          }),
        ).rejects.toMatchObject({ code: "fence_lost" });
        expect(await store.renewLease(first!.fence, T0, 100)).toBe(false);
        await store.checkpoint({
          fence: second!.fence,
          assistantParts: [{ type: "text", text: "ok" }],
          step: step(0),
          joinedInputIds: [],
          nowMs: T0,
        });
        expect((await store.loadRun(a.runId))?.run.steps).toBe(1);
      }),
    );

    test(
      "tool progress is saved between steps, fenced, without a step or an event",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        const first = await store.acquireRun({ runId: a.runId, owner: "w1", nowMs: T0, leaseMs: 100 });
        const call = {
          type: "tool-call" as const,
          toolCallId: "call-1",
          toolName: "notes_append",
          input: { text: "x" },
          startedAtMs: T0,
          attempts: 1,
        };
        const eventsBefore = (await store.readEvents("c", 0, 100)).length;
        await store.saveToolProgress(first!.fence, [call], T0);
        const ctx = await store.loadPromptContext(a.runId, { maxTurns: 10 });
        expect(ctx.assistant?.parts).toEqual([call]);
        expect(ctx.run.steps).toBe(0);
        expect((await store.readEvents("c", 0, 100)).length).toBe(eventsBefore);
        const second = await store.acquireRun({ runId: a.runId, owner: "w2", nowMs: T0 + 200, leaseMs: 100 });
        await expect(store.saveToolProgress(first!.fence, [], T0 + 200)).rejects.toMatchObject({
          code: "fence_lost",
        });
        const result = {
          type: "tool-result" as const,
          toolCallId: "call-1",
          toolName: "notes_append",
          output: "ok",
          isError: false,
        };
        await store.saveToolProgress(second!.fence, [call, result], T0 + 200);
        expect((await store.loadPromptContext(a.runId, { maxTurns: 10 })).assistant?.parts).toEqual([
          call,
          result,
        ]);
      }),
    );

    test(
      "terminal race: only one commit wins",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        const acquired = await store.acquireRun({ runId: a.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
        const commit = (text: string) =>
          store.commitTerminal({
            fence: acquired!.fence,
            state: "completed",
            assistantParts: [{ type: "text", text }],
            nowMs: T0,
          });
        const results = await Promise.allSettled([commit("one"), commit("two")]);
        expect(results.filter((r) => r.status === "fulfilled").length).toBe(1);
        const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        expect(loser.reason).toMatchObject({ code: "fence_lost" });
        const events = await store.readEvents("c", 0, 100);
        expect(events.filter((e) => e.type === "terminal").length).toBe(1);
      }),
    );

    test(
      "absorption: an injected input's run ends absorbed only when the answering run completes",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        const acquired = await store.acquireRun({ runId: a.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
        const b = await store.admit(admitRequest("c", "b", { policy: "inject" }));
        const ctx = await store.loadPromptContext(a.runId, { maxTurns: 10 });
        expect(ctx.joinable.map((j) => j.runId)).toEqual([b.runId]);
        const parts = [
          { type: "joined-input" as const, messageId: b.inputMessageId },
          { type: "text" as const, text: "answer" },
        ];
        await store.checkpoint({
          fence: acquired!.fence,
          assistantParts: parts,
          step: step(0),
          joinedInputIds: [b.inputMessageId],
          nowMs: T0,
        });
        expect((await store.loadRun(b.runId))?.run.state).toBe("queued");
        const done = await store.commitTerminal({
          fence: acquired!.fence,
          state: "completed",
          assistantParts: parts,
          nowMs: T0,
        });
        expect(done.absorbed).toEqual([b.runId]);
        const view = await store.loadRun(b.runId);
        expect(view?.run).toMatchObject({ state: "absorbed", absorbedInto: a.runId });
      }),
    );

    test(
      "recovery order: a run to resume, then urgent FIFO, then ordinary FIFO",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        await store.acquireRun({ runId: a.runId, owner: "dead", nowMs: T0, leaseMs: 10 });
        const b = await store.admit(admitRequest("c", "b"));
        const u1 = await store.admit(admitRequest("c", "u1", { policy: "interrupt-next" }));
        const u2 = await store.admit(admitRequest("c", "u2", { policy: "interrupt-next" }));
        const scanned = await store.scanRecoverable({ afterQueueSeq: 0, limit: 2 });
        expect(scanned.map((r) => r.id)).toEqual([a.runId, b.runId]);
        const rest = await store.scanRecoverable({ afterQueueSeq: scanned[1]!.queueSeq, limit: 10 });
        expect(rest.map((r) => r.id)).toEqual([u1.runId, u2.runId]);
        expect(await store.nextRunnable("c", T0 + 5)).toBeNull();
        expect((await store.nextRunnable("c", T0 + 1000))?.id).toBe(a.runId);
        const resumed = await store.acquireRun({
          runId: a.runId,
          owner: "w",
          nowMs: T0 + 1000,
          leaseMs: 1000,
        });
        await store.commitTerminal({
          fence: resumed!.fence,
          state: "interrupted",
          assistantParts: [],
          nowMs: T0,
        });
        const order: string[] = [];
        for (;;) {
          const next = await store.nextRunnable("c", T0 + 2000);
          if (!next) break;
          order.push(next.id);
          const got = await store.acquireRun({ runId: next.id, owner: "w", nowMs: T0 + 2000, leaseMs: 1000 });
          await store.commitTerminal({
            fence: got!.fence,
            state: "completed",
            assistantParts: [],
            nowMs: T0,
          });
        }
        expect(order).toEqual([u1.runId, u2.runId, b.runId]);
      }),
    );

    test(
      "purge leaves a tombstone that refuses later admissions",
      withStore(async (store) => {
        const a = await store.admit(admitRequest("c", "a"));
        expect(await store.purgeConversation("c", { nowMs: T0 })).toMatchObject({ outcome: "active" });
        await store.requestStop(a.runId, "interrupted", T0);
        expect(await store.purgeConversation("c", { expectedVersion: -1, nowMs: T0 })).toMatchObject({
          outcome: "conflict",
        });
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "already_purged" });
        expect(await store.loadRun(a.runId)).toBeNull();
        await expect(store.admit(admitRequest("c", "b"))).rejects.toMatchObject({
          code: "conversation_purged",
        });
      }),
    );

    test(
      "reads for one run never touch history",
      withStore(async (store) => {
        for (let i = 0; i < 30; i++) {
          const r = await store.admit(admitRequest("c", `m${i}`));
          const got = await store.acquireRun({ runId: r.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
          await store.commitTerminal({
            fence: got!.fence,
            state: "completed",
            assistantParts: [{ type: "text", text: `a${i}` }],
            nowMs: T0,
          });
        }
        const last = await store.admit(admitRequest("c", "last"));
        const ctx = await store.loadPromptContext(last.runId, { maxTurns: 5 });
        expect(ctx.history.length).toBe(5);
        expect(ctx.history.at(-1)?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
        const view = await store.loadRun(last.runId);
        expect(view?.run.state).toBe("queued");
      }),
    );
  });
}
