/**
 * The contract every RuntimeStore backend must honour, with what operators ask of it beyond the
 * runtime (OperatorRuntimeStore). Run it against a backend with `runStoreConformance(name, open)`;
 * `open` returns a fresh, empty store.
 */
import { test as bunTest, describe, expect } from "bun:test";
import type { OutboxRepository } from "../../outbox/types.ts";
import { createScheduleService } from "../../schedules/service.ts";
import type { ScheduleRepository } from "../../schedules/types.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { DurableEvent } from "../../src/runtime/events.ts";
import { type AdmitRequest, isSettledUpdate } from "../../src/runtime/store.ts";
import type { InputPolicy } from "../../src/runtime/types.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { childConformance } from "./child-conformance.ts";

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

/** A PostgreSQL test creates a database first: on a loaded machine that alone may take seconds. */
const test = (name: string, fn: () => Promise<void>) => bunTest(name, fn, 20_000);

const step = (n: number) => ({
  step: n,
  model: "m",
  finishReason: "stop",
  usage: { inputTokens: 1, outputTokens: 1 },
  startedAtMs: T0,
  finishedAtMs: T0,
});

/** A fresh, empty store, and the outbox on the same database (where terminal deliveries land). */
export interface OpenedStore {
  store: OperatorRuntimeStore;
  outbox: OutboxRepository;
  /** The schedules on the same database. */
  schedules: ScheduleRepository;
  /** The outcome recorded for an ingress identity (`admitted`, `refused:pairing`, …); null when none. */
  ingressOutcome: (source: string, key: string) => Promise<string | null>;
  /** Per table that has a `conversation_id` column, how many of its rows name `conversationId`. */
  rowsOf: (conversationId: string) => Promise<Record<string, number>>;
  close: () => Promise<void>;
}

export function runStoreConformance(name: string, open: () => Promise<OpenedStore>) {
  describe(`RuntimeStore conformance: ${name}`, () => {
    const withStores = (fn: (opened: OpenedStore) => Promise<void>) => async () => {
      const opened = await open();
      try {
        await fn(opened);
      } finally {
        await opened.close();
      }
    };
    const withStore = (fn: (store: OperatorRuntimeStore) => Promise<void>) =>
      withStores(({ store }) => fn(store));
    const owned = async (store: OperatorRuntimeStore, conversationId: string, key: string, owner = "w") => {
      const admitted = await store.admit(admitRequest(conversationId, key));
      const acquired = await store.acquireRun({ runId: admitted.runId, owner, nowMs: T0, leaseMs: 1000 });
      if (!acquired) throw new Error(`could not acquire ${admitted.runId}`);
      return { admitted, acquired };
    };
    const complete = (
      store: OperatorRuntimeStore,
      fence: { runId: string; fencingToken: number },
      text: string,
    ) =>
      store.commitTerminal({
        fence,
        state: "completed",
        assistantParts: [{ type: "text", text }],
        nowMs: T0,
      });

    childConformance({ withStore, admitRequest });

    test(
      "duplicate admission returns the original run",
      withStore(async (store) => {
        const first = await store.admit(admitRequest("c", "k1"));
        const again = await store.admit({ ...admitRequest("c", "k1"), fingerprint: "fp-k1" });
        expect(first.outcome).toBe("admitted");
        // The input that began the conversation is its event 1 (what names a Slack assistant thread).
        expect(first).toMatchObject({ seq: 1 });
        expect(again).toMatchObject({
          outcome: "duplicate",
          runId: first.runId,
          inputMessageId: first.inputMessageId,
        });
        expect((await store.listActiveRuns("c")).length).toBe(1);
        expect(await store.admit(admitRequest("c", "k2"))).toMatchObject({ outcome: "admitted", seq: 2 });
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
      "a strict ingress replay with other input is a conflict; with the same input, a duplicate",
      withStore(async (store) => {
        const ingress = { source: "web:local", key: "sess:cm1", payload: {}, strict: true };
        const first = await store.admit(admitRequest("c", "web:local:sess:cm1", { ingress }));
        const head = await store.loadConversation("c");
        await expect(
          store.admit({ ...admitRequest("c", "web:local:sess:cm1", { ingress }), fingerprint: "other text" }),
        ).rejects.toMatchObject({ code: "idempotency_conflict" });
        expect((await store.loadConversation("c"))?.version).toBe(head?.version);
        const again = await store.admit(admitRequest("c", "web:local:sess:cm1", { ingress }));
        expect(again).toMatchObject({ outcome: "duplicate", runId: first.runId });
        // A platform's own ids are not strict: its replay is a duplicate whatever it carries.
        const platform = { source: "telegram:bot", key: "update:9", payload: {} };
        const original = await store.admit(admitRequest("c", "telegram:bot:update:9", { ingress: platform }));
        const replay = await store.admit({
          ...admitRequest("c", "telegram:bot:update:9", { ingress: platform }),
          fingerprint: "edited",
        });
        expect(replay).toMatchObject({ outcome: "duplicate", runId: original.runId });
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
      "files a run sends are enqueued fenced, once per key, with the run's conversation",
      withStores(async ({ store, outbox }) => {
        const a = await store.admit(admitRequest("c-files", "a"));
        const first = await store.acquireRun({ runId: a.runId, owner: "w1", nowMs: T0, leaseMs: 100 });
        const file = {
          key: `${a.runId}:file:call-1`,
          channel: "telegram",
          account: "bot-1",
          target: "chat-1",
          replyTo: "42",
          caption: "the chart",
          blobId: "c".repeat(64),
          filename: "chart.png",
          mimeType: "image/png",
          sizeBytes: 1234,
        };
        const ids = await store.enqueueFiles(first!.fence, [file], T0);
        expect(ids).toHaveLength(1);
        expect(await store.enqueueFiles(first!.fence, [file], T0 + 1)).toEqual([]);
        const record = await outbox.show(file.key);
        expect(record).toMatchObject({
          runId: a.runId,
          conversationId: "c-files",
          target: "chat-1",
          replyTo: "42",
          markdown: "the chart",
          state: "pending",
          media: { blobId: file.blobId, filename: "chart.png", mimeType: "image/png", sizeBytes: 1234 },
        });
        await store.acquireRun({ runId: a.runId, owner: "w2", nowMs: T0 + 200, leaseMs: 100 });
        const late = { ...file, key: `${a.runId}:file:call-2` };
        await expect(store.enqueueFiles(first!.fence, [late], T0 + 200)).rejects.toMatchObject({
          code: "fence_lost",
        });
        expect(await outbox.show(late.key)).toBeNull();
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
      "a spilled tool output is kept with its result, fenced, paged by characters, only in its conversation, and purged with it",
      withStore(async (store) => {
        const { admitted, acquired } = await owned(store, "c", "a");
        const other = await owned(store, "other", "b");
        // Multi-byte and astral characters: slices count characters, not bytes.
        const text = `${"é".repeat(10)}🙂${"x".repeat(200_000)}end`;
        const call = { type: "tool-call" as const, toolCallId: "call-1", toolName: "big", input: {} };
        const result = {
          type: "tool-result" as const,
          toolCallId: "call-1",
          toolName: "big",
          output: "head…",
          isError: false,
        };
        const spilled = { ref: "out_1", toolCallId: "call-1", toolName: "big", text };
        const stale = { runId: acquired.fence.runId, fencingToken: acquired.fence.fencingToken + 1 };
        await expect(store.saveToolProgress(stale, [call, result], T0, spilled)).rejects.toMatchObject({
          code: "fence_lost",
        });
        expect(await store.readToolOutput("c", "out_1", { offset: 0, length: 10 })).toBeNull();
        await store.saveToolProgress(acquired.fence, [call, result], T0, spilled);
        expect((await store.loadPromptContext(admitted.runId, { maxTurns: 10 })).assistant?.parts).toEqual([
          call,
          result,
        ]);
        expect(await store.readToolOutput("c", "out_1", { offset: 8, length: 4 })).toEqual({
          toolName: "big",
          text: "éé🙂x",
          totalChars: 200_014,
        });
        expect((await store.readToolOutput("c", "out_1", { offset: 200_011, length: 100 }))?.text).toBe(
          "end",
        );
        expect((await store.readToolOutput("c", "out_1", { offset: 300_000, length: 100 }))?.text).toBe("");
        // Saving again (a retried save) keeps the first text.
        await store.saveToolProgress(acquired.fence, [call, result], T0, { ...spilled, text: "other" });
        expect((await store.readToolOutput("c", "out_1", { offset: 0, length: 3 }))?.totalChars).toBe(
          200_014,
        );
        expect(await store.readToolOutput("other", "out_1", { offset: 0, length: 10 })).toBeNull();
        expect(await store.readToolOutput("c", "out_unknown", { offset: 0, length: 10 })).toBeNull();
        await complete(store, acquired.fence, "done");
        await complete(store, other.acquired.fence, "done");
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(await store.readToolOutput("c", "out_1", { offset: 0, length: 10 })).toBeNull();
      }),
    );

    test(
      "prepared input parts are saved on the run's own input, fenced, and refused for another message",
      withStore(async (store) => {
        const file = { type: "file" as const, ref: "tg-file-1", kind: "photo" as const, sizeBytes: 10 };
        const a = await store.admit(
          admitRequest("c", "a", { parts: [{ type: "text", text: "look" }, file] }),
        );
        const other = await store.admit(admitRequest("c", "b"));
        const first = await store.acquireRun({ runId: a.runId, owner: "w1", nowMs: T0, leaseMs: 100 });
        const prepared = [
          { type: "text" as const, text: "look" },
          {
            ...file,
            mediaType: "image/png",
            prepared: {
              status: "fetched" as const,
              blobId: "a".repeat(64),
              mediaType: "image/png",
              sizeBytes: 9,
            },
          },
        ];
        const eventsBefore = (await store.readEvents("c", 0, 100)).length;
        await store.saveInputParts(first!.fence, a.inputMessageId, prepared);
        expect((await store.loadPromptContext(a.runId, { maxTurns: 10 })).inputs[0]?.parts).toEqual(prepared);
        expect((await store.readEvents("c", 0, 100)).length).toBe(eventsBefore);
        await expect(store.saveInputParts(first!.fence, other.inputMessageId, [])).rejects.toMatchObject({
          code: "not_found",
        });
        await store.acquireRun({ runId: a.runId, owner: "w2", nowMs: T0 + 200, leaseMs: 100 });
        await expect(store.saveInputParts(first!.fence, a.inputMessageId, [])).rejects.toMatchObject({
          code: "fence_lost",
        });
        expect((await store.loadPromptContext(a.runId, { maxTurns: 10 })).inputs[0]?.parts).toEqual(prepared);
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
      "the prompt context carries the run's last saved step record, finish reason included",
      withStore(async (store) => {
        const { admitted, acquired } = await owned(store, "c", "a");
        expect((await store.loadPromptContext(admitted.runId, { maxTurns: 10 })).lastStep).toBeNull();
        const toolStep = { ...step(0), finishReason: "tool-calls" };
        await store.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: "let me look" }],
          step: toolStep,
          joinedInputIds: [],
          nowMs: T0,
        });
        expect((await store.loadPromptContext(admitted.runId, { maxTurns: 10 })).lastStep).toEqual(toolStep);
        const cutStep = { ...step(1), finishReason: "length", finishedAtMs: T0 + 5 };
        await store.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: "let me look... and the answer is" }],
          step: cutStep,
          joinedInputIds: [],
          nowMs: T0 + 5,
        });
        const ctx = await store.loadPromptContext(admitted.runId, { maxTurns: 10 });
        expect(ctx.run.steps).toBe(2);
        expect(ctx.lastStep).toEqual(cutStep);
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
        const next = (nowMs: number) =>
          store.acquireNext({ conversationId: "c", owner: "w", nowMs, leaseMs: 1000 });
        // Held by a live lease: nothing is taken, and the lane learns when to look again.
        expect(await next(T0 + 5)).toEqual({ acquired: null, heldUntilMs: T0 + 10 });
        expect((await store.loadRun(b.runId))?.run.state).toBe("queued");
        const resumed = (await next(T0 + 1000)).acquired;
        expect(resumed?.run).toMatchObject({
          id: a.runId,
          owner: "w",
          state: "interrupt_requested",
          leaseExpiresAtMs: T0 + 2000,
        });
        expect(resumed?.fence).toEqual({ runId: a.runId, fencingToken: 2 });
        await store.commitTerminal({
          fence: resumed!.fence,
          state: "interrupted",
          assistantParts: [],
          nowMs: T0,
        });
        const order: string[] = [];
        for (;;) {
          const { acquired: got } = await next(T0 + 2000);
          if (!got) break;
          order.push(got.run.id);
          await store.commitTerminal({
            fence: got.fence,
            state: "completed",
            assistantParts: [],
            nowMs: T0,
          });
        }
        expect(order).toEqual([u1.runId, u2.runId, b.runId]);
        expect(await next(T0 + 2000)).toEqual({ acquired: null, heldUntilMs: null });
        expect(
          await store.acquireNext({ conversationId: "unknown", owner: "w", nowMs: T0, leaseMs: 1000 }),
        ).toEqual({ acquired: null, heldUntilMs: null });
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
      "a redelivered update whose receipt a purge kept is refused by admission and writes nothing",
      withStores(async ({ store, rowsOf, ingressOutcome }) => {
        const ingress = { source: "chat:acct", key: "u1", payload: { text: "secret" } };
        const first = await store.admit({ ...admitRequest("c", "first"), ingress });
        await store.requestStop(first.runId, "interrupted", T0);
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(await ingressOutcome("chat:acct", "u1")).toBe("purged");

        // Delivered again after the purge, for its chat, whose key now maps to no conversation.
        const again = { ...admitRequest("c", "first"), conversation: { key: "chat:acct:t1" }, ingress };
        let thrown: unknown;
        await store.admit(again).catch((error: unknown) => {
          thrown = error;
        });
        expect(isSettledUpdate(thrown)).toBe(true);
        expect(await ingressOutcome("chat:acct", "u1")).toBe("purged");
        // Nothing was written: the chat's next update starts its conversation from nothing.
        const next = await store.admit({
          ...admitRequest("c", "next"),
          conversation: { key: "chat:acct:t1" },
          ingress: { source: "chat:acct", key: "u2", payload: { text: "hello" } },
        });
        expect(next.outcome).toBe("admitted");
        expect(await rowsOf(next.conversationId)).toMatchObject({
          runs: 1,
          messages: 1,
          ingress_receipts: 1,
        });
        expect((await store.listActiveRuns(next.conversationId)).map((r) => r.id)).toEqual([next.runId]);
      }),
    );

    test(
      "a redelivered update refused before (flood, pairing, budget) is refused by admission and writes nothing",
      withStores(async ({ store, rowsOf, ingressOutcome }) => {
        const conversationId = await store.resolveConversationKey("chat:acct:t1", T0);
        const claimed = await store.claimIngress({
          source: "chat:acct",
          key: "u7",
          outcome: "refused:flood",
          payload: { text: "too fast" },
          conversationId,
          nowMs: T0,
        });
        expect(claimed.fresh).toBe(true);
        const ingress = { source: "chat:acct", key: "u7", payload: { text: "too fast" } };
        let thrown: unknown;
        await store
          .admit({ ...admitRequest("c", "too fast"), conversation: { key: "chat:acct:t1" }, ingress })
          .catch((error: unknown) => {
            thrown = error;
          });
        expect(isSettledUpdate(thrown)).toBe(true);
        expect(thrown).toMatchObject({ code: "update_refused" });
        expect(await ingressOutcome("chat:acct", "u7")).toBe("refused:flood");
        expect(await rowsOf(conversationId)).toMatchObject({ runs: 0, messages: 0, ingress_receipts: 1 });
      }),
    );

    test(
      "purge removes every row of the conversation, table by table, and keeps a tombstone naming who",
      withStores(async ({ store, outbox, schedules, rowsOf, ingressOutcome }) => {
        const other = await store.admit(admitRequest("keep", "k1"));
        const first = await store.admit({
          ...admitRequest("c", "first"),
          ingress: { source: "chat:acct", key: "u1", payload: { text: "secret one" } },
        });
        const got = await store.acquireRun({ runId: first.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
        await store.checkpoint({
          fence: got!.fence,
          assistantParts: [{ type: "text", text: "secret answer" }],
          step: step(0),
          joinedInputIds: [],
          nowMs: T0,
        });
        await store.commitTerminal({
          fence: got!.fence,
          state: "completed",
          assistantParts: [{ type: "text", text: "secret answer" }],
          delivery: {
            runId: first.runId,
            conversationId: "c",
            channel: "telegram",
            account: "acct",
            target: "t1",
            state: "completed",
            text: "secret answer",
          },
          nowMs: T0,
        });
        await store.claimIngress({
          source: "chat:acct",
          key: "u2",
          outcome: "command:status",
          payload: { text: "/status" },
          conversationId: "c",
          nowMs: T0,
        });
        await store.saveConversationSettings("c", { model: "smart", timezone: "UTC" }, T0);
        await store.saveSummary({
          conversationId: "c",
          text: "secret summary",
          throughFinishSeq: 1,
          expectedVersion: 0,
          nowMs: T0,
        });
        const service = createScheduleService({
          repository: schedules,
          clock: new FakeClock(T0),
          dispatch: async () => ({ status: "retry", reason: "never in this test" }),
        });
        await service.create({
          conversationId: "c",
          replyTarget: "t1",
          channel: "telegram",
          createdBy: "user",
          prompt: "secret reminder",
          when: { kind: "after", delayMs: 60_000 },
        });
        const before = await rowsOf("c");
        for (const table of ["messages", "runs", "events", "ingress_receipts", "outbox", "schedules"]) {
          expect({ table, some: (before[table] ?? 0) > 0 }).toEqual({ table, some: true });
        }

        expect(await store.purgeConversation("c", { nowMs: T0 + 5, actor: "user:telegram:1001" })).toEqual({
          outcome: "purged",
        });
        const after = await rowsOf("c");
        for (const [table, rows] of Object.entries(after)) {
          const expected =
            table === "conversation_tombstones" ? 1 : table === "outbox" ? (before.outbox ?? 0) : 0;
          expect({ table, rows }).toEqual({ table, rows: expected });
        }
        // The outbox keeps its records as delivery history, without their text; none is sent any more.
        const records = await outbox.list({ conversationId: "c", limit: 10 });
        expect(records.length).toBeGreaterThan(0);
        for (const record of records) {
          expect(JSON.stringify(record)).not.toContain("secret");
          expect(["cancelled", "delivered"]).toContain(record.state);
        }
        expect(await store.loadPurge("c")).toEqual({
          conversationId: "c",
          purgedAtMs: T0 + 5,
          purgedBy: "user:telegram:1001",
        });
        expect(await store.loadPurge("keep")).toBeNull();
        // Its updates stay known, without content, so a platform's redelivery is not admitted afresh.
        expect(await ingressOutcome("chat:acct", "u1")).toBe("purged");
        expect(await ingressOutcome("chat:acct", "u2")).toBe("purged");
        expect(await store.loadConversationSettings("c")).toEqual({});
        // Another conversation is untouched.
        expect(await store.loadRun(other.runId)).not.toBeNull();
        expect((await rowsOf("keep")).runs).toBe(1);
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

    test(
      "a lease is renewed and a fence asserted only under the current token",
      withStore(async (store) => {
        const { acquired } = await owned(store, "c", "a");
        expect(await store.renewLease(acquired.fence, T0 + 500, 1000)).toBe(true);
        expect((await store.loadRun(acquired.fence.runId))?.run.leaseExpiresAtMs).toBe(T0 + 1500);
        await store.assertFence(acquired.fence);
        const stale = { ...acquired.fence, fencingToken: acquired.fence.fencingToken - 1 };
        await expect(store.assertFence(stale)).rejects.toMatchObject({ code: "fence_lost" });
        expect(await store.renewLease(stale, T0 + 500, 1000)).toBe(false);
        await complete(store, acquired.fence, "done");
        await expect(store.assertFence(acquired.fence)).rejects.toMatchObject({ code: "fence_lost" });
        expect(await store.renewLease(acquired.fence, T0 + 600, 1000)).toBe(false);
      }),
    );

    test(
      "a released run queues again with its progress; expiring leases frees only other owners' runs",
      withStore(async (store) => {
        const { acquired } = await owned(store, "c", "a");
        await store.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: "half" }],
          step: step(0),
          joinedInputIds: [],
          nowMs: T0,
        });
        await store.releaseRun(acquired.fence, T0 + 1);
        const released = (await store.loadRun(acquired.fence.runId))!;
        expect(released.run).toMatchObject({
          state: "queued",
          owner: null,
          leaseExpiresAtMs: null,
          steps: 1,
        });
        expect(released.answer?.parts).toEqual([{ type: "text", text: "half" }]);
        await expect(store.releaseRun(acquired.fence, T0 + 2)).rejects.toMatchObject({ code: "fence_lost" });

        const mine = await owned(store, "m", "x", "me");
        const theirs = await owned(store, "t", "y", "dead");
        expect(await store.expireLeases({ exceptOwner: "me", nowMs: T0 + 3 })).toBe(1);
        expect((await store.loadRun(theirs.admitted.runId))?.run.leaseExpiresAtMs).toBe(T0 + 3);
        expect((await store.loadRun(mine.admitted.runId))?.run.leaseExpiresAtMs).toBe(T0 + 1000);
        const taken = await store.acquireNext({
          conversationId: "t",
          owner: "me",
          nowMs: T0 + 3,
          leaseMs: 1000,
        });
        expect(taken.acquired?.run.id).toBe(theirs.admitted.runId);
      }),
    );

    test(
      "a checkpoint keeps the answer so far and totals the steps' usage",
      withStore(async (store) => {
        const { acquired } = await owned(store, "c", "a");
        const usage = (costUsd?: number) => ({
          inputTokens: 2,
          outputTokens: 1,
          ...(costUsd ? { costUsd } : {}),
        });
        const first = await store.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: "one" }],
          step: { ...step(0), usage: usage(0.5) },
          joinedInputIds: [],
          nowMs: T0,
        });
        await store.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: "one two" }],
          step: { ...step(1), usage: usage() },
          joinedInputIds: [],
          nowMs: T0,
        });
        const view = (await store.loadRun(acquired.fence.runId))!;
        expect(view.run).toMatchObject({
          steps: 2,
          usage: { inputTokens: 4, outputTokens: 2 },
          costComplete: false,
        });
        expect(view.answer).toMatchObject({
          status: "streaming",
          parts: [{ type: "text", text: "one two" }],
        });
        const events = await store.readEvents("c", first.seq - 1, 10);
        expect(events.map((e) => e.type)).toEqual(["checkpoint", "checkpoint"]);
      }),
    );

    test(
      "a stop request ends a queued run, asks a running one, and leaves a finished or unknown one alone",
      withStore(async (store) => {
        const { acquired } = await owned(store, "c", "a");
        const queued = await store.admit(admitRequest("c", "b"));
        expect(await store.requestStop(acquired.fence.runId, "interrupted", T0)).toMatchObject({
          outcome: "requested",
        });
        expect((await store.loadRun(acquired.fence.runId))?.run).toMatchObject({
          state: "interrupt_requested",
          stopReason: "interrupted",
        });
        expect(await store.requestStop(queued.runId, "superseded", T0)).toMatchObject({ outcome: "ended" });
        expect((await store.loadRun(queued.runId))?.run).toMatchObject({
          state: "superseded",
          stopReason: "superseded",
        });
        // A queued run whose message was deleted ends cancelled, and its record says why.
        const deleted = await store.admit(admitRequest("c", "d"));
        expect(await store.requestStop(deleted.runId, "withdrawn", T0)).toMatchObject({ outcome: "ended" });
        expect((await store.loadRun(deleted.runId))?.run).toMatchObject({
          state: "cancelled",
          stopReason: "withdrawn",
        });
        expect(await store.requestStop(queued.runId, "interrupted", T0)).toEqual({ outcome: "not_active" });
        expect(await store.requestStop("nope", "interrupted", T0)).toEqual({ outcome: "not_active" });
      }),
    );

    test(
      "a run ended without its owner closes the stream it opened in an earlier attempt, so the chat's later answers go",
      withStores(async ({ store, outbox }) => {
        // Each run previewed in an attempt that died: queued again, its stream record is open
        // (resumed by the outbox's recovery, not final).
        const streamOf = async (conversationId: string, runId: string, target: string) => {
          const stream = await outbox.beginStream(
            { runId, conversationId, channel: "telegram", account: "bot", target, markdown: "half an" },
            T0,
          );
          if (!stream.live) throw new Error("the stream should start live on an empty target");
          await outbox.recordStreamProgress(stream.record.id, [`m-${runId}`], "rich", T0);
          await outbox.insert(
            [
              {
                key: `later-${runId}`,
                runId: `later-${runId}`,
                conversationId,
                channel: "telegram",
                account: "bot",
                target,
                kind: "message",
                markdown: "a later answer",
              },
            ],
            T0,
          );
        };
        const superseded = await store.admit(admitRequest("c1", "a"));
        await streamOf("c1", superseded.runId, "t1");
        const stopped = await store.admit(admitRequest("c2", "a"));
        await streamOf("c2", stopped.runId, "t2");
        await store.admit(admitRequest("c1", "b", { policy: "supersede" }));
        expect((await outbox.recoverInterrupted(new Set(), T0)).resumedStreams).toHaveLength(2);
        expect(await store.requestStop(stopped.runId, "interrupted", T0)).toMatchObject({ outcome: "ended" });

        for (const [runId, state] of [
          [superseded.runId, "superseded"],
          [stopped.runId, "cancelled"],
        ] as const) {
          expect((await store.loadRun(runId))?.run.state).toBe(state);
          expect(await outbox.show(`${runId}:stream`)).toMatchObject({
            state: "pending",
            final: true,
            markdown: "",
          });
        }
        // Both streams are due at the heads of their chats: the worker can settle them and go on.
        const due = await outbox.nextDeliverable(T0 + 1, { limit: 10, channels: ["telegram"] });
        expect(due.map((r) => r.key).sort()).toEqual(
          [`${stopped.runId}:stream`, `${superseded.runId}:stream`].sort(),
        );
      }),
    );

    test(
      "a stream opened after its run ended (superseded meanwhile) is refused, not left open",
      withStores(async ({ store, outbox }) => {
        const ended = await store.admit(admitRequest("c3", "a"));
        await store.admit(admitRequest("c3", "b", { policy: "supersede" }));
        expect((await store.loadRun(ended.runId))?.run.state).toBe("superseded");
        const start = await outbox.beginStream(
          {
            runId: ended.runId,
            conversationId: "c3",
            channel: "telegram",
            account: "bot",
            target: "t3",
            markdown: "",
          },
          T0,
        );
        expect(start).toEqual({ live: false, reason: "answered" });
        expect(await outbox.show(`${ended.runId}:stream`)).toBeNull();
      }),
    );

    test(
      "the answer's delivery commits with the terminal state, once; a fenced-out commit writes none",
      withStores(async ({ store, outbox }) => {
        const { acquired } = await owned(store, "c", "a");
        const delivery = {
          runId: acquired.fence.runId,
          conversationId: "c",
          channel: "web",
          account: "local",
          target: "t1",
          state: "completed" as const,
          text: "the answer",
        };
        const terminal = () =>
          store.commitTerminal({
            fence: acquired.fence,
            state: "completed",
            assistantParts: [{ type: "text", text: "the answer" }],
            delivery,
            nowMs: T0,
          });
        const done = await terminal();
        expect(done.run.state).toBe("completed");
        expect(await outbox.show(`${acquired.fence.runId}:0`)).toMatchObject({
          state: "pending",
          markdown: "the answer",
          channel: "web",
          target: "t1",
        });
        await expect(terminal()).rejects.toMatchObject({ code: "fence_lost" });
        expect((await outbox.list({})).length).toBe(1);

        const silent = await owned(store, "d", "b");
        await complete(store, silent.acquired.fence, "no chat");
        expect(await outbox.show(`${silent.acquired.fence.runId}:0`)).toBeNull();
      }),
    );

    test(
      "messages page in order with their run's state",
      withStore(async (store) => {
        const { acquired } = await owned(store, "c", "a");
        await complete(store, acquired.fence, "answer a");
        await store.admit(admitRequest("c", "b"));
        const first = await store.listMessages("c", { afterOrder: 0, limit: 2 });
        expect(first.items.map((i) => [i.message.role, i.runState])).toEqual([
          ["user", "completed"],
          ["assistant", "completed"],
        ]);
        expect(first.nextAfterOrder).toBe(first.items[1]!.order);
        const rest = await store.listMessages("c", { afterOrder: first.nextAfterOrder!, limit: 2 });
        expect(rest.items.map((i) => [i.message.role, i.runState])).toEqual([["user", "queued"]]);
        expect(rest.nextAfterOrder).toBeNull();
        expect((await store.listMessages("none", { afterOrder: 0, limit: 5 })).items).toEqual([]);
      }),
    );

    test(
      "compaction: candidates beyond the kept turns, a summary saved by compare-and-set, prompts after it",
      withStore(async (store) => {
        for (const key of ["a", "b", "c"]) {
          const { acquired } = await owned(store, "conv", key);
          await complete(store, acquired.fence, `answer ${key}`);
        }
        const candidates = await store.loadCompactionCandidates("conv", { keepTurns: 1, maxTurns: 10 });
        expect(candidates.summary).toBeNull();
        expect(candidates.pending).toBe(2);
        expect(candidates.turns.map((t) => t.messages.map((m) => m.role))).toEqual([
          ["user", "assistant"],
          ["user", "assistant"],
        ]);
        // Not due yet: the count alone, no turn read.
        const notDue = await store.loadCompactionCandidates("conv", {
          keepTurns: 1,
          maxTurns: 10,
          minPending: 2,
        });
        expect(notDue).toMatchObject({ pending: 2, turns: [] });
        const due = await store.loadCompactionCandidates("conv", {
          keepTurns: 1,
          maxTurns: 10,
          minPending: 1,
        });
        expect(due.turns.length).toBe(2);
        const through = candidates.turns.at(-1)!.finishSeq;
        const save = (expectedVersion: number, throughFinishSeq: number) =>
          store.saveSummary({
            conversationId: "conv",
            text: "summary",
            throughFinishSeq,
            expectedVersion,
            nowMs: T0,
          });
        expect(await save(0, through)).toEqual({ outcome: "saved", version: 1 });
        expect(await save(0, through + 1)).toEqual({ outcome: "conflict", actualVersion: 1 });
        expect(await save(1, through)).toEqual({ outcome: "conflict", actualVersion: 1 });
        const after = await store.loadCompactionCandidates("conv", { keepTurns: 0, maxTurns: 10 });
        expect(after.summary).toMatchObject({ text: "summary", throughFinishSeq: through, version: 1 });
        expect(after.pending).toBe(1);
        const next = await store.admit(admitRequest("conv", "d"));
        const ctx = await store.loadPromptContext(next.runId, { maxTurns: 10 });
        expect(ctx.summary?.text).toBe("summary");
        expect(ctx.history.length).toBe(1);
        expect(ctx.inputs.map((m) => m.id)).toEqual([next.inputMessageId]);
        expect(ctx.assistant).toBeNull();
        await expect(store.loadPromptContext("nope", { maxTurns: 1 })).rejects.toMatchObject({
          code: "not_found",
        });
      }),
    );

    test(
      "conversation keys: one conversation per key until rotated; the old one stays readable",
      withStore(async (store) => {
        const first = await store.resolveConversationKey("chat-1", T0);
        expect(await store.resolveConversationKey("chat-1", T0 + 1)).toBe(first);
        const byKey = await store.admit({ ...admitRequest("unused", "k"), conversation: { key: "chat-1" } });
        expect(byKey.conversationId).toBe(first);
        const rotated = await store.rotateConversationKey("chat-1", T0 + 2);
        expect(rotated).not.toBe(first);
        expect(await store.resolveConversationKey("chat-1", T0 + 3)).toBe(rotated);
        expect((await store.loadConversation(rotated))?.version).toBe(0);
        expect((await store.listActiveRuns(first)).map((r) => r.id)).toEqual([byKey.runId]);
      }),
    );

    test(
      "ingress claims record an identity once; the latest identity per reply target",
      withStores(async ({ store, ingressOutcome }) => {
        const claim = (key: string, replyTarget: string, nowMs: number) =>
          store.claimIngress({
            source: "chat:acct",
            key,
            outcome: "command",
            payload: { replyTarget },
            nowMs,
          });
        expect(await claim("100", "t1", T0)).toEqual({
          fresh: true,
          previousOutcome: null,
          runId: null,
          previousPayload: null,
        });
        // A repeat gets what the first claim recorded, not its own payload.
        expect(await claim("100", "t9", T0 + 1)).toEqual({
          fresh: false,
          previousOutcome: "command",
          runId: null,
          previousPayload: { replyTarget: "t1" },
        });
        expect(await ingressOutcome("chat:acct", "100")).toBe("command");
        expect(await ingressOutcome("chat:acct", "nope")).toBeNull();
        const ingress = { source: "chat:acct", key: "101", payload: { replyTarget: "t2" } };
        const admitted = await store.admit(admitRequest("c", "a", { ingress, nowMs: T0 + 2 }));
        expect(await ingressOutcome("chat:acct", "101")).toBe("admitted");
        expect(await claim("101", "t2", T0 + 3)).toMatchObject({
          fresh: false,
          previousOutcome: "admitted",
          runId: admitted.runId,
        });
        await claim("99", "t1", T0 + 4);
        expect(await store.latestIngressPerTarget("chat:acct", 10)).toEqual([
          { replyTarget: "t1", updateKey: "99" },
          { replyTarget: "t2", updateKey: "101" },
        ]);
        expect(await store.latestIngressPerTarget("chat:acct", 1)).toEqual([
          { replyTarget: "t1", updateKey: "99" },
        ]);
        expect(await store.latestIngressPerTarget("other", 10)).toEqual([]);
      }),
    );

    test(
      "an ingress receipt names the run and input an update was admitted to, or only its outcome",
      withStore(async (store) => {
        const admitted = await store.admit(
          admitRequest("c", "a", { ingress: { source: "chat:acct", key: "u1", payload: { text: "a" } } }),
        );
        const joined = await store.admit(
          admitRequest("c", "b", {
            coalescePending: true,
            ingress: { source: "chat:acct", key: "u2", payload: { text: "b" } },
          }),
        );
        await store.claimIngress({
          source: "chat:acct",
          key: "u3",
          outcome: "command:stop",
          payload: {},
          nowMs: T0,
        });

        expect(await store.loadIngressReceipt("chat:acct", "u1")).toEqual({
          outcome: "admitted",
          conversationId: "c",
          runId: admitted.runId,
          inputMessageId: admitted.inputMessageId,
        });
        expect(joined.outcome).toBe("coalesced");
        expect(await store.loadIngressReceipt("chat:acct", "u2")).toMatchObject({
          runId: admitted.runId,
          inputMessageId: joined.inputMessageId,
        });
        expect(await store.loadIngressReceipt("chat:acct", "u3")).toEqual({
          outcome: "command:stop",
          conversationId: null,
          runId: null,
          inputMessageId: null,
        });
        expect(await store.loadIngressReceipt("chat:acct", "u4")).toBeNull();
        expect(await store.loadIngressReceipt("chat:other", "u1")).toBeNull();
      }),
    );

    test(
      "ingress by key prefix: admitted and claimed inputs of one prefix, newest first, with their payloads",
      withStore(async (store) => {
        const claim = (key: string, nowMs: number, source = "web:local") =>
          store.claimIngress({ source, key, outcome: "command", payload: { text: key }, nowMs });
        await claim("alice:1", T0);
        const ingress = { source: "web:local", key: "alice:2", payload: { text: "alice:2" } };
        await store.admit(admitRequest("c", "a", { ingress, nowMs: T0 + 1 }));
        await claim("alice:3", T0 + 2);
        await claim("alicex:1", T0 + 3); // another prefix that starts the same
        await claim("bob:1", T0 + 4);
        await claim("alice:4", T0 + 5, "web:other"); // another source
        // Characters LIKE would read as patterns are matched as themselves.
        await claim("a%_:1", T0 + 6);

        expect(await store.ingressByPrefix("web:local", "alice:", 10)).toEqual([
          { key: "alice:3", payload: { text: "alice:3" }, atMs: T0 + 2 },
          { key: "alice:2", payload: { text: "alice:2" }, atMs: T0 + 1 },
          { key: "alice:1", payload: { text: "alice:1" }, atMs: T0 },
        ]);
        expect((await store.ingressByPrefix("web:local", "alice:", 2)).map((r) => r.key)).toEqual([
          "alice:3",
          "alice:2",
        ]);
        expect((await store.ingressByPrefix("web:local", "a%_:", 10)).map((r) => r.key)).toEqual(["a%_:1"]);
        expect(await store.ingressByPrefix("web:local", "carol:", 10)).toEqual([]);
      }),
    );

    test(
      "conversation settings merge; none is an empty object",
      withStore(async (store) => {
        expect(await store.loadConversationSettings("c")).toEqual({});
        await store.saveConversationSettings("c", { timezone: "Asia/Tokyo" }, T0);
        await store.saveConversationSettings("c", {}, T0 + 1);
        expect(await store.loadConversationSettings("c")).toEqual({ timezone: "Asia/Tokyo" });
        await store.saveConversationSettings("c", { timezone: "UTC" }, T0 + 2);
        expect(await store.loadConversationSettings("c")).toEqual({ timezone: "UTC" });
      }),
    );

    test(
      "the /model choice persists beside the time zone, and clearing it leaves the time zone",
      withStore(async (store) => {
        await store.saveConversationSettings("c", { timezone: "Asia/Tokyo" }, T0);
        await store.saveConversationSettings("c", { model: "smart" }, T0 + 1);
        expect(await store.loadConversationSettings("c")).toEqual({ timezone: "Asia/Tokyo", model: "smart" });
        await store.saveConversationSettings("c", { model: "fast" }, T0 + 2);
        expect((await store.loadConversationSettings("c")).model).toBe("fast");
        await store.saveConversationSettings("c", { model: undefined }, T0 + 3);
        expect(await store.loadConversationSettings("c")).toEqual({ timezone: "Asia/Tokyo" });
        expect(await store.loadConversationSettings("other")).toEqual({});
      }),
    );

    test(
      "listeners get each committed mutation's events in order, never a refused one's, until unsubscribed",
      withStore(async (store) => {
        const seen: DurableEvent[][] = [];
        const stop = store.onCommitted((events) => seen.push(events));
        const a = await store.admit(admitRequest("c", "a"));
        await expect(store.admit({ ...admitRequest("c", "a"), fingerprint: "other" })).rejects.toMatchObject({
          code: "idempotency_conflict",
        });
        const acquired = await store.acquireRun({ runId: a.runId, owner: "w", nowMs: T0, leaseMs: 1000 });
        stop();
        await complete(store, acquired!.fence, "done");
        expect(seen.map((events) => events.map((e) => [e.type, e.seq]))).toEqual([
          [["admission", 1]],
          [["run-state", 2]],
        ]);
        expect((await store.loadConversation("c"))?.lastSeq).toBe(3);
      }),
    );

    /** A run that ended at one approval request for `notes_append`. */
    const awaiting = async (
      store: OperatorRuntimeStore,
      conversationId: string,
      key: string,
      approvalId: string,
    ) => {
      const { acquired, admitted } = await owned(store, conversationId, key);
      await store.commitTerminal({
        fence: acquired.fence,
        state: "awaiting_approval",
        assistantParts: [
          { type: "tool-call", toolCallId: "call-1", toolName: "notes_append", input: { text: "hi" } },
          { type: "tool-approval-request", approvalId, toolCallId: "call-1", toolName: "notes_append" },
        ],
        approvals: [
          {
            id: approvalId,
            toolCallId: "call-1",
            toolName: "notes_append",
            input: { text: "hi" },
            binding: "sig",
            expiresAtMs: T0 + 60_000,
          },
        ],
        nowMs: T0 + 5,
      });
      return admitted.runId;
    };
    const decide = (conversationId: string, key: string, approvalId: string, state: "approved" | "denied") =>
      admitRequest(conversationId, key, {
        parts: [
          {
            type: "tool-approval-response",
            approvalId,
            toolCallId: "call-1",
            toolName: "notes_append",
            input: { text: "hi" },
            approved: state === "approved",
            decidedBy: "Alice",
            binding: "sig",
          },
        ],
        ingress: { source: "chat:acct", key: `press-${key}`, payload: {} },
        approval: { approvalId, state, decidedBy: "Alice", alwaysAllowTool: "notes_append" },
      });

    test(
      "an approval request commits with the awaiting run; its decision commits with the successor run, once",
      withStore(async (store) => {
        const runId = await awaiting(store, "c", "ask", "ap_000000000001");
        expect((await store.loadRun(runId))?.run.state).toBe("awaiting_approval");
        const pending = await store.loadApproval("ap_000000000001");
        expect(pending).toMatchObject({
          conversationId: "c",
          runId,
          toolCallId: "call-1",
          toolName: "notes_append",
          input: { text: "hi" },
          binding: "sig",
          state: "pending",
          decidedBy: null,
          successorRunId: null,
          expiresAtMs: T0 + 60_000,
        });
        expect((await store.listApprovals({ state: "pending" })).map((a) => a.id)).toEqual([
          "ap_000000000001",
        ]);
        expect(await store.listApprovals({ expiredAtMs: T0 + 59_999 })).toEqual([]);
        expect((await store.listApprovals({ expiredAtMs: T0 + 60_000 })).map((a) => a.id)).toEqual([
          "ap_000000000001",
        ]);

        const admitted = await store.admit(decide("c", "yes", "ap_000000000001", "approved"));
        expect(admitted.outcome).toBe("admitted");
        const decided = await store.loadApproval("ap_000000000001");
        expect(decided).toMatchObject({
          state: "approved",
          decidedBy: "Alice",
          successorRunId: admitted.runId,
        });
        expect(await store.loadConversationSettings("c")).toEqual({ alwaysAllow: ["notes_append"] });
        expect((await store.listActiveRuns("c")).map((r) => r.id)).toEqual([admitted.runId]);

        // The same press again is the same decision; another press is refused and changes nothing.
        const replay = await store.admit(decide("c", "yes", "ap_000000000001", "approved"));
        expect(replay).toMatchObject({ outcome: "duplicate", runId: admitted.runId });
        await expect(store.admit(decide("c", "no", "ap_000000000001", "denied"))).rejects.toMatchObject({
          code: "state_conflict",
        });
        expect((await store.loadApproval("ap_000000000001"))?.state).toBe("approved");
        expect((await store.listActiveRuns("c")).map((r) => r.id)).toEqual([admitted.runId]);
        // A decision names its conversation's approval only.
        await expect(store.admit(decide("other", "x", "ap_000000000001", "denied"))).rejects.toMatchObject({
          code: "not_found",
        });
      }),
    );

    test(
      "a newer message under supersede or interrupt cancels pending approvals; under queue they stay",
      withStore(async (store) => {
        await awaiting(store, "c", "ask", "ap_000000000002");
        const queued = await store.admit(admitRequest("c", "later", { policy: "queue" }));
        expect(queued).toMatchObject({ cancelledApprovals: [] });
        expect((await store.loadApproval("ap_000000000002"))?.state).toBe("pending");
        const newer = await store.admit(admitRequest("c", "newer", { policy: "supersede" }));
        expect(newer).toMatchObject({ cancelledApprovals: ["ap_000000000002"] });
        expect(await store.loadApproval("ap_000000000002")).toMatchObject({
          state: "cancelled",
          decidedBy: "a newer message",
        });
        await expect(store.admit(decide("c", "late", "ap_000000000002", "approved"))).rejects.toMatchObject({
          code: "state_conflict",
        });
      }),
    );

    test(
      "a generated secret is stored once: every later caller reads the first one",
      withStore(async (store) => {
        expect(await store.loadOrCreateSecret("approval", "first", T0)).toBe("first");
        expect(await store.loadOrCreateSecret("approval", "second", T0 + 1)).toBe("first");
        expect(await store.loadOrCreateSecret("other", "x", T0 + 2)).toBe("x");
      }),
    );

    test(
      "a channel's state is absent until saved, then the last value saved",
      withStore(async (store) => {
        expect(await store.loadChannelState("matrix:@bot:example.org:since")).toBeNull();
        await store.saveChannelState("matrix:@bot:example.org:since", "s1", T0);
        await store.saveChannelState("matrix:@bot:example.org:since", "s2", T0 + 1);
        await store.saveChannelState("other", "x", T0 + 2);
        expect(await store.loadChannelState("matrix:@bot:example.org:since")).toBe("s2");
        expect(await store.loadChannelState("other")).toBe("x");
      }),
    );

    test(
      "purging a conversation deletes its approvals",
      withStore(async (store) => {
        await awaiting(store, "c", "ask", "ap_000000000003");
        expect(await store.purgeConversation("c", { nowMs: T0 + 10 })).toEqual({ outcome: "purged" });
        expect(await store.loadApproval("ap_000000000003")).toBeNull();
      }),
    );
  });
}
