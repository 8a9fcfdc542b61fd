/**
 * The operator list views' paging contract, run against each engine through the operator service:
 * following `nextCursor` visits every item of the unpaged list exactly once and in the same
 * order (newest first), including items whose sort times tie, and filters hold on every page.
 */
import { describe, expect, test } from "bun:test";
import type { Page } from "../../src/operator/cursor.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import type { StoreBackend } from "../../src/store/backend.ts";
import { FakeClock } from "../support/fake-clock.ts";

type Stores = Pick<
  StoreBackend,
  "runtime" | "outbox" | "schedules" | "operator" | "search" | "access" | "budgets"
>;

export interface OperatorHarness {
  stores: Stores;
  close(): Promise<void>;
}

const T0 = 1_800_000_000_000;
const fixedClock = new FakeClock(T0, { instantSleeps: true });

/** Admits `count` inputs round-robin over three chats, all at T0 (ties everywhere); completes every other one with a reply. */
async function seed(stores: Stores, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const admitted = await stores.runtime.admit({
      conversation: { key: `test:chat-${i % 3}` },
      idempotencyKey: `page-${i}`,
      fingerprint: `fp-${i}`,
      parts: [{ type: "text", text: `message ${i}` }],
      context: null,
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `run_page${String(i).padStart(3, "0")}`, messageId: `msg_page${i}` },
      nowMs: T0,
    });
    if (i % 2 === 1) continue;
    const acquired = await stores.runtime.acquireRun({
      runId: admitted.runId,
      owner: "conformance",
      nowMs: T0,
      leaseMs: 60_000,
    });
    if (!acquired) throw new Error(`could not acquire ${admitted.runId}`);
    await stores.runtime.commitTerminal({
      fence: acquired.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: `answer ${i}` }],
      delivery: {
        runId: admitted.runId,
        conversationId: admitted.conversationId,
        channel: "telegram",
        account: "bot",
        target: `chat-${i % 3}`,
        state: "completed",
        text: `answer ${i}`,
      },
      nowMs: T0,
    });
  }
}

async function everyPage<T>(read: (cursor: string | undefined) => Promise<Page<T>>): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    pages.push(page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined && pages.length < 100);
  return pages;
}

export function runOperatorPagingConformance(engine: string, open: () => Promise<OperatorHarness>): void {
  describe(`operator paging conformance (${engine})`, () => {
    const withService = async (fn: (operator: OperatorService) => Promise<void>) => {
      const h = await open();
      try {
        await seed(h.stores, 11);
        await fn(createOperatorService({ stores: h.stores, clock: fixedClock }));
      } finally {
        await h.close();
      }
    };

    test("runs: pages of 3 cover the whole list once, newest first, under a state filter too", () =>
      withService(async (operator) => {
        const all = (await operator.runs.list({ limit: 1000 })).items.map((r) => r.id);
        expect(all).toHaveLength(11);
        expect(all[0]).toBe("run_page010");
        const pages = await everyPage((cursor) => operator.runs.list({ limit: 3, cursor }));
        expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 2]);
        expect(pages.flat().map((r) => r.id)).toEqual(all);
        const queued = await everyPage((cursor) => operator.runs.list({ state: "queued", limit: 2, cursor }));
        expect(queued.flat().map((r) => r.id)).toEqual(all.filter((id) => Number(id.slice(-3)) % 2 === 1));
      }));

    test("outbox: records created in the same millisecond page by ordinal and id, none twice", () =>
      withService(async (operator) => {
        const all = (await operator.outbox.list({ limit: 1000 })).items.map((r) => r.id);
        expect(all).toHaveLength(6);
        expect(new Set(all).size).toBe(6);
        const pages = await everyPage((cursor) => operator.outbox.list({ limit: 4, cursor }));
        expect(pages.map((p) => p.length)).toEqual([4, 2]);
        expect(pages.flat().map((r) => r.id)).toEqual(all);
        const one = (await operator.runs.list({ limit: 1000 })).items.at(-1)!.conversationId;
        const filtered = await everyPage((cursor) =>
          operator.outbox.list({ conversationId: one, limit: 1, cursor }),
        );
        expect(filtered.flat().every((r) => r.conversationId === one)).toBe(true);
        expect(filtered.flat()).toHaveLength(2);
      }));

    test("conversations: equal activity times page by id; messages page to older ones", () =>
      withService(async (operator) => {
        const all = (await operator.conversations.list({ limit: 1000 })).items.map((c) => c.id);
        expect(all).toHaveLength(3);
        const pages = await everyPage((cursor) => operator.conversations.list({ limit: 1, cursor }));
        expect(pages.flat().map((c) => c.id)).toEqual(all);

        const id = all[0]!;
        const everything = (await operator.conversations.show(id, { limit: 500 }))!.items.map((i) => i.order);
        expect(everything).toEqual([...everything].sort((a, b) => b - a));
        const messagePages = await everyPage(async (cursor) => {
          const shown = await operator.conversations.show(id, { limit: 2, cursor });
          return { items: shown!.items, nextCursor: shown!.nextCursor };
        });
        expect(messagePages.flat().map((i) => i.order)).toEqual(everything);
        expect(messagePages.slice(0, -1).every((p) => p.length === 2)).toBe(true);
      }));

    test("a conversation's chat commands as received, newest first, other conversations' and non-commands left out", async () => {
      const h = await open();
      try {
        await seed(h.stores, 3);
        const [mine, other] = (
          await createOperatorService({ stores: h.stores, clock: fixedClock }).conversations.list({})
        ).items.map((c) => c.id);
        const claim = (key: string, outcome: string, conversationId: string, text: string, nowMs: number) =>
          h.stores.runtime.claimIngress({
            source: "web:local",
            key,
            outcome,
            payload: { text, channel: "web" },
            conversationId,
            nowMs,
          });
        await claim("u1", "command:help", mine!, "/help", T0 + 1);
        await claim("u2", "command:every", mine!, "/every 0 9 * * 1-5 stand-up", T0 + 2);
        await claim("u3", "command:help", other!, "/help", T0 + 3);
        await claim("u4", "notice:too_long", mine!, "x".repeat(10), T0 + 4);
        const shown = await createOperatorService({ stores: h.stores, clock: fixedClock }).conversations.show(
          mine!,
          {},
        );
        expect(shown!.commands).toEqual([
          { command: "every", text: "/every 0 9 * * 1-5 stand-up", atMs: T0 + 2 },
          { command: "help", text: "/help", atMs: T0 + 1 },
        ]);
      } finally {
        await h.close();
      }
    });
  });
}
