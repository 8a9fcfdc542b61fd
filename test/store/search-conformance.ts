/**
 * SearchStore conformance: history search on both engines (test/store/search.test.ts runs it on
 * SQLite and PostgreSQL). Messages are written through the RuntimeStore, as the runtime writes
 * them, so the index is proved to follow the real write paths.
 */
import { test as bunTest, describe, expect } from "bun:test";
import { forgetConversation } from "../../src/operator/forget.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { AdmitRequest } from "../../src/runtime/store.ts";
import { parseSearchQuery, type SearchQuery } from "../../src/search/query.ts";
import type { SearchStore } from "../../src/search/store.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { admitRequest } from "./conformance.ts";

const T0 = 1_700_000_000_000;
const test = (name: string, fn: () => Promise<void>) => bunTest(name, fn, 30_000);

export interface OpenedSearchStore {
  store: OperatorRuntimeStore;
  search: SearchStore;
  close: () => Promise<void>;
}

const ctx = (channel: string, user: string) => ({
  channel,
  account: "bot",
  target: user,
  surface: "dm",
  delivery: "terminal",
  conversationKey: `${channel}:${user}`,
  principal: { id: user },
  origin: "user",
});

/** A Slack context: a thread names its channel as its room; a DM and a channel's top level do not. */
const slackCtx = (user: string, conversationKey: string, roomKey?: string) => ({
  ...ctx("slack", user),
  surface: roomKey === undefined ? "group" : "thread",
  conversationKey,
  ...(roomKey === undefined ? {} : { roomKey }),
});

function q(text: string): SearchQuery {
  const parsed = parseSearchQuery(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.query;
}

/** One turn: the user's text, then the assistant's answer (with a tool result) committed. */
async function turn(
  store: OperatorRuntimeStore,
  conversationId: string,
  user: [string, string] | ReturnType<typeof slackCtx>,
  text: string,
  answer: string,
) {
  const admitted = await store.admit(
    admitRequest(conversationId, `k-${Math.random()}`, {
      parts: [{ type: "text", text }],
      context: Array.isArray(user) ? ctx(...user) : user,
    }),
  );
  if (admitted.outcome === "duplicate") throw new Error("duplicate");
  const acquired = await store.acquireRun({ runId: admitted.runId, owner: "w", nowMs: T0, leaseMs: 60_000 });
  await store.commitTerminal({
    fence: acquired!.fence,
    state: "completed",
    assistantParts: [
      {
        type: "tool-result",
        toolCallId: "t1",
        toolName: "web_fetch",
        output: { title: "lookup" },
        isError: false,
      },
      { type: "text", text: answer },
    ],
    nowMs: T0 + 1,
  });
  return admitted;
}

/** The refs of every message matching `text`, in any conversation. */
async function refs(search: SearchStore, text: string): Promise<string[]> {
  return (await search.searchHistory({ query: q(text), scope: { kind: "all" }, limit: 20 })).map(
    (h) => h.ref,
  );
}

export function runSearchConformance(name: string, open: () => Promise<OpenedSearchStore>) {
  describe(`SearchStore conformance: ${name}`, () => {
    const withStores = (fn: (opened: OpenedSearchStore) => Promise<void>) => async () => {
      const opened = await open();
      try {
        await fn(opened);
      } finally {
        await opened.close();
      }
    };
    const alice = ["telegram", "1001"] as [string, string];
    const bob = ["telegram", "2002"] as [string, string];
    const aliceOnSlack = ["slack", "1001"] as [string, string];

    test(
      "ranking: the message that matches best comes first; answers and tool results are indexed",
      withStores(async ({ store, search }) => {
        await turn(store, "a1", alice, "the invoice for march is late", "I will check the invoice.");
        await turn(store, "a2", alice, "invoice invoice invoice: march invoice numbers", "Noted.");
        await turn(store, "a3", alice, "lunch plans", "Pasta sounds good.");
        const scope = { kind: "principal", principal: "telegram:1001" } as const;
        const hits = await search.searchHistory({ query: q("invoice march"), scope, limit: 10 });
        expect(hits.map((h) => h.conversationId)).toEqual(["a2", "a1"]);
        expect(hits[0]!.role).toBe("user");
        expect(hits[0]!.snippet).toContain("[invoice]");
        const answers = await search.searchHistory({ query: q("pasta"), scope, limit: 10 });
        expect(answers).toMatchObject([{ conversationId: "a3", role: "assistant" }]);
        expect(await search.searchHistory({ query: q("web_fetch lookup"), scope, limit: 10 })).toHaveLength(
          3,
        );
        expect(await search.searchHistory({ query: q('"march is late"'), scope, limit: 10 })).toHaveLength(1);
        expect(await search.searchHistory({ query: q("invo*"), scope, limit: 10 })).toHaveLength(3);
        expect(await search.searchHistory({ query: q("invoice"), scope, limit: 1 })).toHaveLength(1);
      }),
    );

    test(
      "authorisation: another user's conversation is never found, also not through a crafted reference",
      withStores(async ({ store, search }) => {
        await turn(store, "alice-1", alice, "my secret project is called bluebird", "Nice name.");
        const bobs = await turn(store, "bob-1", bob, "my secret project is called redwing", "Good luck.");
        await turn(store, "alice-slack", aliceOnSlack, "bluebird on slack", "ok");
        const asAlice = { kind: "principal", principal: "telegram:1001" } as const;
        const found = await search.searchHistory({ query: q("secret project"), scope: asAlice, limit: 10 });
        expect(found.map((h) => h.conversationId)).toEqual(["alice-1"]);
        expect(await search.searchHistory({ query: q("redwing"), scope: asAlice, limit: 10 })).toEqual([]);
        // Same user id on another platform is another principal.
        expect(
          (await search.searchHistory({ query: q("bluebird"), scope: asAlice, limit: 10 })).map(
            (h) => h.conversationId,
          ),
        ).toEqual(["alice-1"]);
        // Bob's message id, guessed or leaked: the same answer as an id that does not exist.
        expect(
          await search.readHistory({ ref: bobs.inputMessageId, scope: asAlice, before: 2, after: 2 }),
        ).toBeNull();
        expect(
          await search.readHistory({ ref: "msg-does-not-exist", scope: asAlice, before: 2, after: 2 }),
        ).toBeNull();
        const own = found[0]!;
        const window = await search.readHistory({ ref: own.ref, scope: asAlice, before: 2, after: 2 });
        expect(window?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
        expect(window?.messages[1]?.text).toContain("Nice name.");
        // Narrowed to one conversation, and the operator's view of everything.
        const narrow = { kind: "conversation", conversationId: "bob-1" } as const;
        expect(await search.searchHistory({ query: q("bluebird"), scope: narrow, limit: 10 })).toEqual([]);
        expect(
          await search.searchHistory({ query: q("secret"), scope: { kind: "all" }, limit: 10 }),
        ).toHaveLength(2);
      }),
    );

    test(
      "channel scope: every conversation of the room, never another user's DM or another room, also not by reference",
      withStores(async ({ store, search }) => {
        const room = "sl:T1:ch:C1";
        await turn(
          store,
          "c1-alice",
          slackCtx("U1", `${room}:thread:1.1`, room),
          "quarterly plan draft",
          "ok",
        );
        const bobThread = await turn(
          store,
          "c1-bob",
          slackCtx("U2", `${room}:thread:2.2`, room),
          "quarterly numbers",
          "ok",
        );
        await turn(store, "c1-top", slackCtx("U3", room), "quarterly review at the top level", "ok");
        const bobDm = await turn(
          store,
          "dm-bob",
          slackCtx("U2", "sl:T1:dm:U2"),
          "quarterly salary, private",
          "ok",
        );
        const otherRoom = await turn(
          store,
          "c2-alice",
          slackCtx("U1", "sl:T1:ch:C2:thread:3.3", "sl:T1:ch:C2"),
          "quarterly secret of another channel",
          "ok",
        );
        const channel = { kind: "room", room: `slack:${room}` } as const;
        const found = await search.searchHistory({ query: q("quarterly"), scope: channel, limit: 10 });
        expect(found.map((h) => h.conversationId).sort()).toEqual(["c1-alice", "c1-bob", "c1-top"]);
        expect(await search.searchHistory({ query: q("salary"), scope: channel, limit: 10 })).toEqual([]);
        expect(await search.searchHistory({ query: q("secret"), scope: channel, limit: 10 })).toEqual([]);
        // The same room key on another platform is another room.
        expect(
          await search.searchHistory({
            query: q("quarterly"),
            scope: { kind: "room", room: `telegram:${room}` },
            limit: 10,
          }),
        ).toEqual([]);
        // A DM is its own room: only that DM.
        const dm = { kind: "room", room: "slack:sl:T1:dm:U2" } as const;
        expect(
          (await search.searchHistory({ query: q("quarterly"), scope: dm, limit: 10 })).map(
            (h) => h.conversationId,
          ),
        ).toEqual(["dm-bob"]);
        // References from elsewhere read exactly like made-up ones.
        for (const ref of [bobDm.inputMessageId, otherRoom.inputMessageId, "msg-made-up"]) {
          expect(await search.readHistory({ ref, scope: channel, before: 1, after: 1 })).toBeNull();
        }
        const window = await search.readHistory({
          ref: bobThread.inputMessageId,
          scope: channel,
          before: 1,
          after: 1,
        });
        expect(window?.conversationId).toBe("c1-bob");
        expect(window?.messages[0]?.text).toBe("quarterly numbers");
        // A purged conversation leaves the room.
        expect(await store.purgeConversation("c1-bob", { nowMs: T0 })).toEqual({ outcome: "purged" });
        expect(
          (await search.searchHistory({ query: q("quarterly"), scope: channel, limit: 10 }))
            .map((h) => h.conversationId)
            .sort(),
        ).toEqual(["c1-alice", "c1-top"]);
      }),
    );

    test(
      "history_read returns the exact messages around a reference, bounded by before and after",
      withStores(async ({ store, search }) => {
        for (let i = 0; i < 5; i += 1)
          await turn(store, "c", alice, `question number ${i}`, `answer number ${i}`);
        const scope = { kind: "principal", principal: "telegram:1001" } as const;
        const [hit] = await search.searchHistory({ query: q('"question number 2"'), scope, limit: 1 });
        const window = await search.readHistory({ ref: hit!.ref, scope, before: 2, after: 1 });
        expect(window?.messages.map((m) => m.text)).toEqual([
          "question number 1",
          'web_fetch: {"title":"lookup"} answer number 1',
          "question number 2",
          'web_fetch: {"title":"lookup"} answer number 2',
        ]);
      }),
    );

    test(
      "the index follows every write: an answer updated in place, and a purge that removes it all",
      withStores(async ({ store, search }) => {
        const admitted = await store.admit(
          admitRequest("p", "k1", { parts: [{ type: "text", text: "start" }], context: ctx(...alice) }),
        );
        const acquired = await store.acquireRun({
          runId: admitted.runId,
          owner: "w",
          nowMs: T0,
          leaseMs: 60_000,
        });
        const scope = { kind: "principal", principal: "telegram:1001" } as const;
        await store.saveToolProgress(acquired!.fence, [{ type: "text", text: "draft walrus" }], T0);
        expect(await search.searchHistory({ query: q("walrus"), scope, limit: 5 })).toHaveLength(1);
        await store.commitTerminal({
          fence: acquired!.fence,
          state: "completed",
          assistantParts: [{ type: "text", text: "final narwhal" }],
          nowMs: T0,
        });
        expect(await search.searchHistory({ query: q("walrus"), scope, limit: 5 })).toEqual([]);
        expect(await search.searchHistory({ query: q("narwhal"), scope, limit: 5 })).toHaveLength(1);
        expect(await store.purgeConversation("p", { nowMs: T0 })).toEqual({ outcome: "purged" });
        for (const word of ["narwhal", "start"]) {
          expect(await search.searchHistory({ query: q(word), scope: { kind: "all" }, limit: 5 })).toEqual(
            [],
          );
        }
        expect(
          await search.readHistory({
            ref: admitted.inputMessageId,
            scope: { kind: "all" },
            before: 1,
            after: 1,
          }),
        ).toBeNull();
      }),
    );

    test(
      "an input is searchable once its run ends, with every input the run coalesced; an answer as it is written",
      withStores(async ({ store, search }) => {
        const admit = (key: string, text: string) =>
          store.admit(
            admitRequest("w", key, {
              parts: [{ type: "text", text }],
              context: ctx(...alice),
              coalescePending: true,
            }),
          );
        const first = await admit("k1", "first pelican question");
        const joined = await admit("k2", "second pelican detail");
        expect(joined).toMatchObject({ outcome: "coalesced", runId: first.runId });
        // Admitted, not answered: admission wrote no index row.
        expect(await refs(search, "pelican")).toEqual([]);
        const acquired = await store.acquireRun({
          runId: first.runId,
          owner: "w",
          nowMs: T0,
          leaseMs: 60_000,
        });
        await store.saveToolProgress(acquired!.fence, [{ type: "text", text: "draft walrus" }], T0);
        expect(await refs(search, "walrus")).toHaveLength(1);
        expect(await refs(search, "pelican")).toEqual([]);
        await store.commitTerminal({
          fence: acquired!.fence,
          state: "completed",
          assistantParts: [{ type: "text", text: "one answer" }],
          nowMs: T0 + 1,
        });
        expect((await refs(search, "pelican")).sort()).toEqual(
          [first.inputMessageId, joined.inputMessageId].sort(),
        );
      }),
    );

    test(
      "every other end of a run indexes its input: failed, cancelled, superseded by a newer input, absorbed",
      withStores(async ({ store, search }) => {
        const admit = (conversationId: string, text: string, overrides: Partial<AdmitRequest> = {}) =>
          store.admit(
            admitRequest(conversationId, `k-${text}`, {
              parts: [{ type: "text", text }],
              context: ctx(...alice),
              ...overrides,
            }),
          );
        const failing = await admit("f", "failing osprey");
        const acquired = await store.acquireRun({
          runId: failing.runId,
          owner: "w",
          nowMs: T0,
          leaseMs: 60_000,
        });
        expect(await refs(search, "osprey")).toEqual([]);
        await store.commitTerminal({
          fence: acquired!.fence,
          state: "failed",
          assistantParts: [],
          nowMs: T0,
        });
        expect(await refs(search, "osprey")).toEqual([failing.inputMessageId]);

        // Cancelled before it started (/stop on a queued run).
        const cancelled = await admit("c", "cancelled kestrel");
        expect(await refs(search, "kestrel")).toEqual([]);
        expect(await store.requestStop(cancelled.runId, "interrupted", T0)).toMatchObject({
          outcome: "ended",
        });
        expect((await store.loadRun(cancelled.runId))?.run.state).toBe("cancelled");
        expect(await refs(search, "kestrel")).toEqual([cancelled.inputMessageId]);

        // Superseded by a newer input: its admission ends the queued run and indexes that input only.
        const old = await admit("s", "superseded heron");
        const newer = await admit("s", "superseding egret", { policy: "supersede" });
        expect((await store.loadRun(old.runId))?.run.state).toBe("superseded");
        expect(await refs(search, "heron")).toEqual([old.inputMessageId]);
        expect(newer.outcome).toBe("admitted");
        expect(await refs(search, "egret")).toEqual([]);

        // Absorbed: an injected input answered by the running run's answer is indexed by that commit.
        const running = await admit("a", "running gannet");
        const lease = await store.acquireRun({
          runId: running.runId,
          owner: "w",
          nowMs: T0,
          leaseMs: 60_000,
        });
        const injected = await admit("a", "injected gannet", { policy: "inject" });
        expect(await refs(search, "gannet")).toEqual([]);
        const ended = await store.commitTerminal({
          fence: lease!.fence,
          state: "completed",
          assistantParts: [
            { type: "joined-input", messageId: injected.inputMessageId },
            { type: "text", text: "both answered" },
          ],
          nowMs: T0,
        });
        expect(ended.absorbed).toEqual([injected.runId]);
        expect((await refs(search, "gannet")).sort()).toEqual(
          [running.inputMessageId, injected.inputMessageId].sort(),
        );
      }),
    );

    test(
      "an input edited before its run ends is indexed once, with its last text",
      withStores(async ({ store, search }) => {
        const admitted = await store.admit(
          admitRequest("e", "k1", {
            parts: [{ type: "text", text: "photo of a toucan" }],
            context: ctx(...alice),
          }),
        );
        const acquired = await store.acquireRun({
          runId: admitted.runId,
          owner: "w",
          nowMs: T0,
          leaseMs: 60_000,
        });
        // What a run does once it has prepared an attachment: the input's parts are rewritten.
        await store.saveInputParts(acquired!.fence, admitted.inputMessageId, [
          { type: "text", text: "photo of a puffin" },
        ]);
        expect(await refs(search, "puffin")).toEqual([]);
        await store.commitTerminal({
          fence: acquired!.fence,
          state: "completed",
          assistantParts: [{ type: "text", text: "nice bird" }],
          nowMs: T0,
        });
        expect(await refs(search, "puffin")).toEqual([admitted.inputMessageId]);
        expect(await refs(search, "toucan")).toEqual([]);
        expect(await refs(search, "photo")).toEqual([admitted.inputMessageId]);
      }),
    );

    test(
      "/forget: a conversation's inputs, answered or still queued, are never found after its purge",
      withStores(async ({ store, search }) => {
        await turn(store, "gone", alice, "answered albatross", "ok");
        const queued = await store.admit(
          admitRequest("gone", "k-queued", {
            parts: [{ type: "text", text: "queued albatross" }],
            context: ctx(...alice),
          }),
        );
        // /forget ends the queued run first (superseded), then purges.
        const forgotten = await forgetConversation(
          { store, clock: new FakeClock(T0, { instantSleeps: true }) },
          "gone",
          "telegram:1001",
        );
        expect(forgotten.outcome).toBe("purged");
        expect(await refs(search, "albatross")).toEqual([]);
        expect(
          await search.readHistory({
            ref: queued.inputMessageId,
            scope: { kind: "all" },
            before: 1,
            after: 1,
          }),
        ).toBeNull();
      }),
    );

    test(
      "/new: the input of the run it interrupts is found in the old conversation, which stays readable",
      withStores(async ({ store, search }) => {
        const queued = await store.admit(
          admitRequest("before-new", "k1", {
            parts: [{ type: "text", text: "unanswered cormorant" }],
            context: ctx(...alice),
          }),
        );
        expect(await store.requestStop(queued.runId, "interrupted", T0)).toMatchObject({ outcome: "ended" });
        await store.rotateConversationKey("telegram:1001", T0);
        const scope = { kind: "principal", principal: "telegram:1001" } as const;
        const hits = await search.searchHistory({ query: q("cormorant"), scope, limit: 5 });
        expect(hits).toMatchObject([
          { ref: queued.inputMessageId, conversationId: "before-new", role: "user" },
        ]);
      }),
    );

    test(
      "query syntax in the user's text is only words: quotes, operators and column filters do nothing",
      withStores(async ({ store, search }) => {
        await turn(store, "c", alice, "NEAR the body: AND OR NOT col:umn ^start", "fine");
        const scope = { kind: "all" } as const;
        for (const text of [
          "NEAR(",
          "body:",
          "AND OR",
          "col:umn",
          "^start",
          "a & b | !c",
          "x <-> y",
          "'quote",
        ]) {
          const parsed = parseSearchQuery(text);
          if (!parsed.ok) continue;
          await search.searchHistory({ query: parsed.query, scope, limit: 5 });
        }
        expect(await search.searchHistory({ query: q("body: AND"), scope, limit: 5 })).toHaveLength(1);
        expect(await search.searchHistory({ query: q("col:umn"), scope, limit: 5 })).toHaveLength(1);
      }),
    );
  });
}
