/**
 * StateStore conformance: what both engines must do with the goal, todo and reactions slots. Run by
 * test/store/state.test.ts on SQLite and on PostgreSQL.
 */
import { describe, expect, test } from "bun:test";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { StateStore } from "../../src/state/store.ts";
import { admitRequest } from "./conformance.ts";

const T0 = 1_700_000_000_000;

export interface OpenedStateStore {
  store: OperatorRuntimeStore & StateStore;
  close: () => Promise<void>;
}

export function runStateConformance(name: string, open: () => Promise<OpenedStateStore>) {
  describe(`StateStore conformance: ${name}`, () => {
    const withStore = (fn: (store: OperatorRuntimeStore & StateStore) => Promise<void>) => async () => {
      const opened = await open();
      try {
        await fn(opened.store);
      } finally {
        await opened.close();
      }
    };

    test(
      "a slot never set is absent; each save bumps its version and appends a state event with the actor",
      withStore(async (store) => {
        expect(await store.loadState("c")).toEqual({});
        const first = await store.saveState({
          conversationId: "c",
          slot: "goal",
          value: { text: "ship v2", status: "active" },
          actor: "human:alice",
          nowMs: T0,
        });
        expect(first).toMatchObject({ outcome: "saved", version: 1 });
        const second = await store.saveState({
          conversationId: "c",
          slot: "todo",
          value: { items: [{ text: "write tests", status: "pending" }] },
          actor: "agent",
          runId: "run_1",
          nowMs: T0 + 1,
        });
        expect(second).toMatchObject({ outcome: "saved", version: 1 });
        const state = await store.loadState("c");
        expect(state.goal).toEqual({
          slot: "goal",
          value: { text: "ship v2", status: "active" },
          version: 1,
          actor: "human:alice",
          updatedAtMs: T0,
        });
        expect(state.todo?.actor).toBe("agent");
        const events = await store.readEvents("c", 0, 10);
        expect(events.map((e) => e.type)).toEqual(["state", "state"]);
        expect(events[0]).toMatchObject({ slot: "goal", version: 1, actor: "human:alice", runId: "" });
        expect(events[1]).toMatchObject({ slot: "todo", version: 1, actor: "agent", runId: "run_1" });
        expect(events.map((e) => e.seq)).toEqual([1, 2]);
      }),
    );

    test(
      "agent and human changes interleave with the runs' own ledger events, in one sequence",
      withStore(async (store) => {
        await store.admit(admitRequest("c", "k1"));
        const actors = ["agent", "human:bob", "agent", "human:alice"] as const;
        for (const [i, actor] of actors.entries()) {
          const saved = await store.saveState({
            conversationId: "c",
            slot: "goal",
            value: { text: `goal ${i}`, status: "active" },
            actor,
            expectedVersion: i,
            nowMs: T0 + i,
          });
          expect(saved).toMatchObject({ outcome: "saved", version: i + 1 });
        }
        await store.admit(admitRequest("c", "k2"));
        const events = await store.readEvents("c", 0, 20);
        expect(events.map((e) => e.type)).toEqual([
          "admission",
          "state",
          "state",
          "state",
          "state",
          "admission",
        ]);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(events.flatMap((e) => (e.type === "state" ? [e.actor] : []))).toEqual([...actors]);
        expect((await store.loadState("c")).goal).toMatchObject({ version: 4, actor: "human:alice" });
        expect((await store.loadConversation("c"))?.lastSeq).toBe(6);
      }),
    );

    test(
      "a stale expected version is a conflict that writes nothing and returns the current record",
      withStore(async (store) => {
        const save = (text: string, expectedVersion?: number) =>
          store.saveState({
            conversationId: "c",
            slot: "goal",
            value: { text, status: "active" },
            actor: "agent",
            nowMs: T0,
            ...(expectedVersion === undefined ? {} : { expectedVersion }),
          });
        await save("first", 0);
        await save("second by a human", 1);
        const stale = await save("agent based on v1", 1);
        expect(stale).toMatchObject({
          outcome: "conflict",
          actual: { version: 2, value: { text: "second by a human" } },
        });
        const never = await store.saveState({
          conversationId: "fresh",
          slot: "todo",
          value: { items: [] },
          actor: "agent",
          expectedVersion: 3,
          nowMs: T0,
        });
        expect(never).toEqual({ outcome: "conflict", actual: null });
        expect(await store.loadConversation("fresh")).toBeNull();
        expect((await store.readEvents("c", 0, 10)).length).toBe(2);
        expect((await store.loadState("c")).goal?.version).toBe(2);
      }),
    );

    test(
      "concurrent saves on one version: exactly one wins",
      withStore(async (store) => {
        const results = await Promise.all(
          ["a", "b", "c", "d"].map((text) =>
            store.saveState({
              conversationId: "c",
              slot: "todo",
              value: { items: [{ text, status: "pending" }] },
              actor: "agent",
              expectedVersion: 0,
              nowMs: T0,
            }),
          ),
        );
        expect(results.filter((r) => r.outcome === "saved").length).toBe(1);
        expect((await store.readEvents("c", 0, 10)).length).toBe(1);
      }),
    );

    test(
      "purgeConversation removes the slots, and a purged conversation refuses a save",
      withStore(async (store) => {
        await store.saveState({
          conversationId: "c",
          slot: "goal",
          value: { text: "secret plan", status: "active" },
          actor: "human:alice",
          nowMs: T0,
        });
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(await store.loadState("c")).toEqual({});
        await expect(
          store.saveState({
            conversationId: "c",
            slot: "goal",
            value: { text: "again", status: "active" },
            actor: "agent",
            nowMs: T0,
          }),
        ).rejects.toMatchObject({ code: "conversation_purged" });
        expect(await store.loadState("c")).toEqual({});
      }),
    );

    test(
      "the reactions slot is saved, versioned and purged like the others",
      withStore(async (store) => {
        const value = {
          items: [{ key: "reaction:w1", emoji: "👍", messageId: "w0", by: { id: "alice" }, atMs: T0 }],
        };
        const saved = await store.saveState({
          conversationId: "c",
          slot: "reactions",
          value,
          actor: "human:alice",
          expectedVersion: 0,
          nowMs: T0,
        });
        expect(saved).toMatchObject({ outcome: "saved", version: 1 });
        expect((await store.loadState("c")).reactions).toEqual({
          slot: "reactions",
          value,
          version: 1,
          actor: "human:alice",
          updatedAtMs: T0,
        });
        expect((await store.readEvents("c", 0, 10))[0]).toMatchObject({ type: "state", slot: "reactions" });
        expect(await store.purgeConversation("c", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(await store.loadState("c")).toEqual({});
      }),
    );

    test(
      "a new conversation (as /new makes) starts with no state",
      withStore(async (store) => {
        const old = await store.resolveConversationKey("tg:1", T0);
        await store.saveState({
          conversationId: old,
          slot: "goal",
          value: { text: "old goal", status: "active" },
          actor: "human:alice",
          nowMs: T0,
        });
        const fresh = await store.rotateConversationKey("tg:1", T0 + 1);
        expect(fresh).not.toBe(old);
        expect(await store.loadState(fresh)).toEqual({});
        expect((await store.loadState(old)).goal?.version).toBe(1);
      }),
    );
  });
}
