/**
 * The operator's conversation search (`conversations.list({ query })`) on each engine, through
 * the operator service: what it matches (a user's id or name, the channel key), case and LIKE
 * wildcards, paging with the list's cursors across equal activity times, purged conversations,
 * and a conversation far older than the 500 most recently active ones. Run by
 * test/store/conversation-search.test.ts on SQLite and on PostgreSQL.
 */
import { describe, expect, test } from "bun:test";
import type { Page } from "../../src/operator/cursor.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import type { ConversationListItem } from "../../src/operator/types.ts";
import type { StoreBackend } from "../../src/store/backend.ts";
import { FakeClock } from "../support/fake-clock.ts";

const T0 = 1_800_000_000_000;
const clock = new FakeClock(T0 + 10_000_000, { instantSleeps: true });

export interface SearchHarness {
  backend: StoreBackend;
  close(): Promise<void>;
}

let counter = 0;

/** Admits one input on `key` as `user` at `nowMs`, with the context a channel gives its runs. */
async function admitAs(
  backend: StoreBackend,
  key: string,
  user: { id: string; name?: string } | null,
  nowMs: number,
): Promise<string> {
  counter += 1;
  const admitted = await backend.runtime.admit({
    conversation: { key },
    idempotencyKey: `search-${counter}`,
    fingerprint: `fp-search-${counter}`,
    parts: [{ type: "text", text: `hello ${counter}` }],
    context:
      user === null
        ? null
        : {
            channel: "telegram",
            account: "bot",
            target: key,
            surface: "dm",
            delivery: "terminal",
            conversationKey: key,
            principal: user,
            origin: "user",
          },
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: `run_search${counter}`, messageId: `msg_search${counter}` },
    nowMs,
  });
  return admitted.conversationId;
}

/** Completes the conversation's queued runs, so a purge may take it. */
async function settle(backend: StoreBackend, conversationId: string): Promise<void> {
  for (const run of await backend.operator.listRuns({ conversationId, state: "queued", limit: 100 })) {
    const acquired = await backend.runtime.acquireRun({
      runId: run.id,
      owner: "t",
      nowMs: T0,
      leaseMs: 60_000,
    });
    if (!acquired) throw new Error(`could not acquire ${run.id}`);
    await backend.runtime.commitTerminal({
      fence: acquired.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: "ok" }],
      nowMs: T0,
    });
  }
}

async function everyPage(
  read: (cursor: string | undefined) => Promise<Page<ConversationListItem>>,
): Promise<ConversationListItem[][]> {
  const pages: ConversationListItem[][] = [];
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    pages.push(page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined && pages.length < 100);
  return pages;
}

export function runConversationSearchConformance(engine: string, open: () => Promise<SearchHarness>): void {
  describe(`conversation search conformance (${engine})`, () => {
    const withService =
      (fn: (backend: StoreBackend, operator: OperatorService) => Promise<void>) => async () => {
        const h = await open();
        try {
          await fn(h.backend, createOperatorService({ stores: h.backend, clock }));
        } finally {
          await h.close();
        }
      };
    const ids = async (operator: OperatorService, query: string) =>
      (await operator.conversations.list({ query, limit: 1000 })).items.map((c) => c.id);

    test(
      "matches a user's id, a user's name (any case, any user of the conversation) and the channel key; nothing else",
      withService(async (backend, operator) => {
        const alice = await admitAs(backend, "tg:bot:dm:4242", { id: "4242", name: "Alice Okonkwo" }, T0 + 1);
        const group = await admitAs(backend, "tg:bot:group:-77", { id: "9001", name: "Bob" }, T0 + 2);
        // Carol spoke in the group before Bob: the title shows Bob, the search still finds her.
        await admitAs(backend, "tg:bot:group:-77", { id: "5150", name: "Carol Díaz" }, T0 + 1);
        const anonymous = await admitAs(backend, "web:session-xyz", null, T0 + 3);

        expect(await ids(operator, "4242")).toEqual([alice]);
        expect(await ids(operator, "okonKWO")).toEqual([alice]);
        expect(await ids(operator, "ALICE O")).toEqual([alice]);
        const [found] = (await operator.conversations.list({ query: "alice" })).items;
        expect(found).toMatchObject({ id: alice, title: "Alice Okonkwo", key: "tg:bot:dm:4242" });
        expect(await ids(operator, "carol")).toEqual([group]);
        expect(await ids(operator, "5150")).toEqual([group]);
        expect(await ids(operator, "GROUP:-7")).toEqual([group]);
        expect(await ids(operator, "session-x")).toEqual([anonymous]);
        // Most recently active first, as the unfiltered list.
        expect(await ids(operator, "tg:bot:")).toEqual([group, alice]);
        expect(await ids(operator, "  okonkwo  ")).toEqual([alice]);
        // Blank is no filter.
        expect(await ids(operator, " ")).toEqual(await ids(operator, ""));
        expect(await ids(operator, "")).toHaveLength(3);
      }),
    );

    test(
      "no match is an empty last page; a conversation id, message text or channel name alone does not match",
      withService(async (backend, operator) => {
        const id = await admitAs(backend, "tg:bot:dm:1", { id: "1", name: "Dana" }, T0);
        expect(await operator.conversations.list({ query: "zebra" })).toEqual({
          items: [],
          nextCursor: null,
        });
        expect(await ids(operator, id)).toEqual([]);
        expect(await ids(operator, "hello")).toEqual([]);
        expect(await ids(operator, "telegram")).toEqual([]);
      }),
    );

    test(
      "% and _ and \\ in the query are plain characters",
      withService(async (backend, operator) => {
        const percent = await admitAs(backend, "tg:bot:dm:p", { id: "p", name: "Deals 50%_off" }, T0 + 1);
        const lookalike = await admitAs(backend, "tg:bot:dm:q", { id: "q", name: "Deals 50xyoff" }, T0 + 2);
        const backslash = await admitAs(backend, "tg:bot:dm:r", { id: "r", name: "back\\slash" }, T0 + 3);
        const underscore = await admitAs(backend, "tg:bot:dm:s", { id: "s", name: "snake_case" }, T0 + 4);
        expect(await ids(operator, "%")).toEqual([percent]);
        expect(await ids(operator, "_")).toEqual([underscore, percent]);
        expect(await ids(operator, "50%_o")).toEqual([percent]);
        expect(await ids(operator, "50__off")).toEqual([]);
        expect(await ids(operator, "\\")).toEqual([backslash]);
        expect(await ids(operator, "k\\s")).toEqual([backslash]);
        expect(await ids(operator, "deals")).toEqual([lookalike, percent]);
      }),
    );

    test(
      "pages of 2 visit every match once, in list order, across equal activity times",
      withService(async (backend, operator) => {
        const matching: string[] = [];
        for (let i = 0; i < 7; i += 1) {
          matching.push(await admitAs(backend, `tg:bot:dm:m${i}`, { id: `m${i}`, name: `Erin ${i}` }, T0));
          await admitAs(backend, `tg:bot:dm:o${i}`, { id: `o${i}`, name: `Frank ${i}` }, T0);
        }
        const all = await ids(operator, "erin");
        expect(new Set(all)).toEqual(new Set(matching));
        // The same order as the unfiltered list, filtered: activity, then id, descending.
        const unfiltered = (await operator.conversations.list({ limit: 1000 })).items.map((c) => c.id);
        expect(all).toEqual(unfiltered.filter((id) => matching.includes(id)));
        const pages = await everyPage((cursor) =>
          operator.conversations.list({ query: "ERIN", limit: 2, cursor }),
        );
        expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
        expect(pages.flat().map((c) => c.id)).toEqual(all);
      }),
    );

    test(
      "a purged conversation is no longer found; a rotated key finds the old and the new conversation",
      withService(async (backend, operator) => {
        const gone = await admitAs(backend, "tg:bot:dm:purge", { id: "p1", name: "Gina" }, T0);
        const kept = await admitAs(backend, "tg:bot:dm:keep", { id: "k1", name: "Gina Two" }, T0 + 1);
        expect(await ids(operator, "gina")).toEqual([kept, gone]);
        await settle(backend, gone);
        expect(await backend.runtime.purgeConversation(gone, { nowMs: T0 + 2 })).toEqual({
          outcome: "purged",
        });
        expect(await ids(operator, "gina")).toEqual([kept]);
        expect(await ids(operator, "dm:purge")).toEqual([]);

        const fresh = await backend.runtime.rotateConversationKey("tg:bot:dm:keep", T0 + 3);
        expect(new Set(await ids(operator, "dm:keep"))).toEqual(new Set([kept, fresh]));
      }),
    );

    test(
      "a conversation older than the 600 most recently active ones is found, on the first page",
      withService(async (backend, operator) => {
        const old = await admitAs(backend, "tg:bot:dm:ancient", { id: "31337", name: "Hannelore Quist" }, T0);
        // Admitted 50 at a time: each its own chat, its own transaction.
        for (let batch = 0; batch < 600; batch += 50) {
          await Promise.all(
            Array.from({ length: 50 }, (_, k) =>
              admitAs(
                backend,
                `tg:bot:dm:recent-${batch + k}`,
                { id: `r${batch + k}`, name: `Recent ${batch + k}` },
                T0 + 1000 + batch + k,
              ),
            ),
          );
        }
        const recent = (await operator.conversations.list({ limit: 500 })).items.map((c) => c.id);
        expect(recent).not.toContain(old);
        const found = await operator.conversations.list({ query: "hannelore", limit: 10 });
        expect(found.items.map((c) => c.id)).toEqual([old]);
        expect(found.nextCursor).toBeNull();
        expect(await ids(operator, "31337")).toEqual([old]);
        expect(await ids(operator, "recent 59")).toHaveLength(11);
      }),
      60_000,
    );
  });
}
