/**
 * The contract every OutboxRepository backend must honour. Run it against a backend with
 * `runOutboxRepositoryConformance(name, open)`; `open` returns a fresh, empty outbox.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { canTransition, OUTBOX_TRANSITIONS } from "../../outbox/transitions.ts";
import type { OutboxInsert, OutboxRepository, OutboxState } from "../../outbox/types.ts";
import { isSwitchboardError } from "../../src/errors.ts";
import type { AnswerDelivery, AnswerDeliveryResult } from "../../src/store/outbox-records.ts";
import { messageInsert } from "./support/records.ts";

/** The writes the runtime's terminal commit makes inside its own transaction. */
export interface OutboxTransaction {
  insert(inserts: OutboxInsert[], nowMs: number): Promise<string[]>;
  finalize(key: string, markdown: string, nowMs: number): Promise<boolean>;
  commitAnswer(answer: AnswerDelivery, nowMs: number): Promise<AnswerDeliveryResult>;
}

export interface OutboxBackend {
  repo: OutboxRepository;
  /** Runs `work` in one transaction of the backend's database; a throw rolls everything back. */
  transaction<T>(work: (tx: OutboxTransaction) => Promise<T>): Promise<T>;
  /** Rows in the outbox table, counted with SQL rather than through the repository. */
  countRows(): Promise<number>;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const ALL = ["telegram", "discord", "slack", "web"] as const;

async function expectError(promise: Promise<unknown>, code: string, message: RegExp) {
  try {
    await promise;
  } catch (error) {
    expect(isSwitchboardError(error)).toBe(true);
    expect((error as { code: string }).code).toBe(code);
    expect((error as Error).message).toMatch(message);
    return;
  }
  throw new Error(`expected a ${code} error`);
}

export function runOutboxRepositoryConformance(name: string, open: () => Promise<OutboxBackend>) {
  describe(`OutboxRepository conformance: ${name}`, () => {
    let backend: OutboxBackend;
    let repo: OutboxRepository;

    beforeEach(async () => {
      backend = await open();
      repo = backend.repo;
    });
    afterEach(() => backend.close());

    async function heads(nowMs = T0) {
      return (await repo.nextDeliverable(nowMs, { limit: 10, channels: ALL })).map((r) => r.markdown);
    }

    describe("state transitions", () => {
      test("cancelled is final, delivered can only fail, and sending is reachable only from pending", () => {
        // Only the platform's own report can say a delivered message never arrived (operators cannot).
        expect(OUTBOX_TRANSITIONS.delivered).toEqual(["failed"]);
        expect(OUTBOX_TRANSITIONS.cancelled).toEqual([]);
        const states = Object.keys(OUTBOX_TRANSITIONS) as OutboxState[];
        expect(states.filter((from) => canTransition(from, "sending"))).toEqual(["pending"]);
        expect(canTransition("ambiguous", "sending")).toBe(false);
      });

      test("the worker cannot move a record out of a state it does not hold", async () => {
        const [id] = await repo.insert([messageInsert("chat-a", "hello")], T0);
        expect(await repo.markDelivered(id!, { messageIds: ["1"] }, T0)).toBe(false);
        expect(await repo.markAmbiguous(id!, "x", T0)).toBe(false);
        expect(await repo.markSending(id!, T0)).not.toBeNull();
        expect(await repo.markSending(id!, T0)).toBeNull();
        expect(await repo.markDelivered(id!, { messageIds: ["1"] }, T0)).toBe(true);
        expect(await repo.scheduleRetry(id!, T0, "late", T0)).toBe(false);
        expect(await repo.markFailed(id!, "late", T0)).toBe(false);
        expect((await repo.show(id!))?.state).toBe("delivered");
      });

      test("the last chunk's record delivers the message in the same write, with every chunk's ids", async () => {
        const [id] = await repo.insert([messageInsert("chat-a", "long answer")], T0);
        await repo.markSending(id!, T0, { format: "rich", chunks: ["part one", "part two"] });
        expect(await repo.recordChunkDelivered(id!, 0, ["m1"], T0 + 1, false)).toBe(true);
        expect((await repo.show(id!))?.state).toBe("sending");
        // A stale index (chunk 0 again, a second worker's view) changes nothing.
        expect(await repo.recordChunkDelivered(id!, 0, ["m9"], T0 + 2, true)).toBe(false);
        expect(await repo.recordChunkDelivered(id!, 1, ["m2"], T0 + 3, true)).toBe(true);
        const delivered = await repo.show(id!);
        expect(delivered).toMatchObject({
          state: "delivered",
          chunksDelivered: 2,
          receipt: { messageIds: ["m1", "m2"] },
        });
        expect(delivered!.history.slice(-3).map((h) => h.action)).toEqual([
          "chunk delivered",
          "chunk delivered",
          "delivered",
        ]);
        expect(await repo.recordChunkDelivered(id!, 2, ["m3"], T0 + 4, true)).toBe(false);
      });

      test("operators get an error that names the state and what is allowed", async () => {
        const [id] = await repo.insert([messageInsert("chat-a", "hello")], T0);
        await repo.markSending(id!, T0);
        await repo.markDelivered(id!, { messageIds: ["1"] }, T0);
        await expectError(
          repo.retry(id!, "operator:ann", T0),
          "state_conflict",
          /is delivered .*delivered is final/,
        );
        await expectError(repo.cancel(id!, "operator:ann", T0), "state_conflict", /cannot become cancelled/);
        const [pendingId] = await repo.insert([messageInsert("chat-a", "two")], T0);
        await expectError(
          repo.resolve(pendingId!, "delivered", "operator:ann", "looked", T0),
          "state_conflict",
          /is pending and cannot become delivered; from pending it can only become sending or cancelled/,
        );
        await repo.markSending(pendingId!, T0);
        await expectError(
          repo.cancel(pendingId!, "operator:ann", T0),
          "state_conflict",
          /being sent right now/,
        );
        await expectError(repo.retry("obx_missing", "operator:ann", T0), "not_found", /outbox list/);
      });
    });

    describe("insert", () => {
      test("ordinals increase per target and a repeated key is ignored", async () => {
        const a1 = messageInsert("chat-a", "a1");
        const ids = await repo.insert([a1, messageInsert("chat-b", "b1"), messageInsert("chat-a", "a2")], T0);
        expect(ids).toHaveLength(3);
        expect(await repo.insert([a1], T0 + 5)).toEqual([]);
        const records = await repo.list({});
        const ordinals = Object.fromEntries(records.map((r) => [r.markdown, r.ordinal]));
        expect(ordinals).toEqual({ a1: 1, a2: 2, b1: 1 });
        expect(records.every((r) => r.history[0]?.action === "enqueued" && r.state === "pending")).toBe(true);
      });

      test("the transactional insert joins the caller's transaction: a rolled-back terminal commit enqueues nothing", async () => {
        await expect(
          backend.transaction(async (tx) => {
            await tx.insert([messageInsert("chat-a", "answer")], T0);
            throw new Error("fence lost");
          }),
        ).rejects.toThrow("fence lost");
        expect(await backend.countRows()).toBe(0);
      });

      test("an empty message is refused with what to do instead", async () => {
        await expect(
          backend.transaction((tx) => tx.insert([messageInsert("chat-a", "  ")], T0)),
        ).rejects.toThrow(/leave an empty answer out/);
      });
    });

    describe("next deliverable", () => {
      test("only the head of each target, and a target waits while its head is sending, retrying or ambiguous", async () => {
        const [a1, a2] = await repo.insert(
          [messageInsert("chat-a", "a1"), messageInsert("chat-a", "a2"), messageInsert("chat-b", "b1")],
          T0,
        );
        expect((await heads()).sort()).toEqual(["a1", "b1"]);

        await repo.markSending(a1!, T0);
        expect(await heads()).toEqual(["b1"]);

        await repo.scheduleRetry(a1!, T0 + 1000, "500", T0);
        expect(await heads(T0 + 999)).toEqual(["b1"]);
        expect(await repo.nextWakeAtMs(ALL, T0)).toBe(T0);
        expect((await heads(T0 + 1000)).sort()).toEqual(["a1", "b1"]);

        await repo.markSending(a1!, T0 + 1000);
        await repo.markAmbiguous(a1!, "hung", T0 + 1000);
        expect(await heads(T0 + 5000)).toEqual(["b1"]);

        await repo.cancel(a1!, "operator:ann", T0 + 6000, "sent by hand");
        expect((await heads(T0 + 6000)).sort()).toEqual(["a2", "b1"]);
        expect((await repo.show(a2!))?.ordinal).toBe(2);
      });

      test("an ambiguous head holds its chat until its hold ends; without one, until an operator decides", async () => {
        const [a1] = await repo.insert([messageInsert("chat-a", "a1"), messageInsert("chat-a", "a2")], T0);
        await repo.markSending(a1!, T0);
        await repo.markAmbiguous(a1!, "hung", T0, T0 + 60_000);
        expect(await heads(T0 + 59_999)).toEqual([]);
        // Nothing else to do: the worker wakes when the hold ends.
        expect(await repo.nextWakeAtMs(ALL, T0 + 1000)).toBe(T0 + 60_000);
        expect(await heads(T0 + 60_000)).toEqual(["a2"]);
        expect((await repo.show(a1!))?.state).toBe("ambiguous");
        const [later] = await repo.nextDeliverable(T0 + 60_000, { limit: 1, channels: ALL });
        expect(await repo.markSending(later!.id, T0 + 60_000)).not.toBeNull();

        const [b1] = await repo.insert([messageInsert("chat-b", "b1"), messageInsert("chat-b", "b2")], T0);
        await repo.markSending(b1!, T0);
        await repo.markAmbiguous(b1!, "hung", T0);
        expect(await heads(T0 + 365 * 24 * 3_600_000)).toEqual([]);
        // a1's hold is over and b1's never ends: no wake-up for either.
        expect(await repo.nextWakeAtMs(["telegram"], T0 + 60_000)).toBeNull();
        // The operator's retry ends the hold: the record goes first again.
        await repo.retry(b1!, "operator:ann", T0 + 2000);
        expect(await heads(T0 + 2000)).toEqual(["b1"]);
      });

      test("a stream behind a held ambiguous record waits, and previews live once the hold is over", async () => {
        const [a1] = await repo.insert([messageInsert("chat-h", "a1")], T0);
        await repo.markSending(a1!, T0);
        await repo.markAmbiguous(a1!, "hung", T0, T0 + 1000);
        const stream = {
          runId: "run_after_hold",
          conversationId: "conv-h",
          channel: "telegram" as const,
          account: "bot-1",
          target: "chat-h",
          markdown: "partial",
        };
        expect(await repo.beginStream(stream, T0 + 999)).toEqual({ live: false, reason: "queued" });
        expect((await repo.beginStream(stream, T0 + 1000)).live).toBe(true);
      });

      test("records interrupted by a crash hold their chats like any ambiguous record", async () => {
        const [a1] = await repo.insert([messageInsert("chat-r", "r1"), messageInsert("chat-r", "r2")], T0);
        await repo.markSending(a1!, T0);
        const summary = await repo.recoverInterrupted(new Set(), T0 + 10, T0 + 5000);
        expect(summary.ambiguous).toEqual([a1!]);
        expect(await heads(T0 + 4999)).toEqual([]);
        expect(await heads(T0 + 5000)).toEqual(["r2"]);
      });

      test("a failed head does not block the target; channels without an adapter are not offered", async () => {
        const [a1] = await repo.insert(
          [
            messageInsert("chat-a", "a1"),
            messageInsert("chat-a", "a2"),
            messageInsert("chat-d", "d1", { channel: "discord" }),
          ],
          T0,
        );
        await repo.markSending(a1!, T0);
        await repo.markFailed(a1!, "400 chat not found", T0);
        expect(await repo.nextDeliverable(T0, { limit: 10, channels: ["telegram"] })).toMatchObject([
          { markdown: "a2" },
        ]);
        expect(await repo.nextDeliverable(T0, { limit: 10, channels: [] })).toEqual([]);
      });

      test("excluded targets and the limit are honoured", async () => {
        await repo.insert(
          [messageInsert("chat-a", "a1"), messageInsert("chat-b", "b1"), messageInsert("chat-c", "c1")],
          T0,
        );
        const excluded = new Set(["telegram\u0000bot-1\u0000chat-a"]);
        const got = await repo.nextDeliverable(T0, { limit: 1, channels: ALL, excludeTargets: excluded });
        expect(got).toHaveLength(1);
        expect(got[0]?.target).not.toBe("chat-a");
      });
    });

    describe("recovery on startup", () => {
      test("idempotent sends are requeued, streams with messages resume, the rest become ambiguous", async () => {
        const [tg, dc] = await repo.insert(
          [messageInsert("chat-a", "telegram"), messageInsert("chan-1", "discord", { channel: "discord" })],
          T0,
        );
        const live = await repo.beginStream(
          {
            runId: "run_s",
            conversationId: "c",
            channel: "telegram",
            account: "bot-1",
            target: "chat-s",
            markdown: "x",
          },
          T0,
        );
        const bare = await repo.beginStream(
          {
            runId: "run_b",
            conversationId: "c",
            channel: "telegram",
            account: "bot-1",
            target: "chat-b",
            markdown: "y",
          },
          T0,
        );
        if (!live.live || !bare.live) throw new Error("streams should start live on empty targets");
        await repo.recordStreamProgress(live.record.id, ["m1"], "rich", T0);
        await repo.markSending(tg!, T0);
        await repo.markSending(dc!, T0);

        const summary = await repo.recoverInterrupted(new Set(["discord"]), T0 + 10);
        expect(summary).toEqual({
          requeued: [dc!],
          resumedStreams: [live.record.id],
          ambiguous: [tg!, bare.record.id],
          awaitingStatus: [],
        });
        const telegram = await repo.show(tg!);
        expect(telegram?.state).toBe("ambiguous");
        expect(telegram?.lastError).toMatch(/may or may not show it.*resolve --delivered/);
        expect((await repo.show(dc!))?.history.at(-1)).toMatchObject({
          actor: "system",
          action: "recovered",
        });
        expect((await repo.show(live.record.id))?.receipt).toEqual({ messageIds: ["m1"] });
        expect(await repo.counts("conv-chat-a")).toEqual({ waiting: 0, ambiguous: 1 });
      });
    });

    describe("platform delivery statuses", () => {
      const WA = { channel: "whatsapp" as const, account: "1065" };
      const delivered = (messageId: string) => ({ messageId, outcome: "delivered" as const, status: "read" });

      async function sendingRecord(target: string, chunks = ["only chunk"]) {
        const [id] = await repo.insert([messageInsert(target, chunks.join(" "), WA)], T0);
        const record = await repo.markSending(id!, T0, { format: "rich", chunks });
        return record!;
      }

      test("a delivered status settles a sending or ambiguous record, with its message id, once", async () => {
        const sending = await sendingRecord("15550001");
        const first = await repo.applyPlatformStatus(sending.key, 0, delivered("wamid.A"), T0 + 5);
        expect(first).toMatchObject({
          applied: true,
          record: { state: "delivered", receipt: { messageIds: ["wamid.A"] } },
        });
        expect(first.record?.history.at(-1)).toEqual({
          atMs: T0 + 5,
          actor: "system",
          action: "resolved by platform status",
          note: "read (platform message wamid.A, chunk 1)",
        });
        // The send's own answer, arriving after the status, changes nothing.
        expect(await repo.recordChunkDelivered(sending.id, 0, ["wamid.A"], T0 + 6, true)).toBe(false);
        expect(await repo.applyPlatformStatus(sending.key, 0, delivered("wamid.A"), T0 + 7)).toMatchObject({
          applied: false,
          why: "the record is already delivered",
        });

        const stuck = await sendingRecord("15550002");
        await repo.markAmbiguous(stuck.id, "no answer", T0 + 1);
        const settled = await repo.applyPlatformStatus(stuck.key, 0, delivered("wamid.B"), T0 + 9);
        expect(settled.record).toMatchObject({ state: "delivered", lastError: null });
        expect(await repo.counts(stuck.conversationId)).toEqual({ waiting: 0, ambiguous: 0 });
      });

      test("a failed status fails the record with the platform's reason; an unknown key or earlier chunk changes nothing", async () => {
        const record = await sendingRecord("15550003", ["part one", "part two"]);
        expect(await repo.applyPlatformStatus(record.key, 0, delivered("wamid.C1"), T0 + 1)).toMatchObject({
          applied: false,
          why: expect.stringContaining("not the last"),
        });
        expect(await repo.applyPlatformStatus("run_nobody:0", 0, delivered("wamid.X"), T0 + 1)).toEqual({
          applied: false,
          why: "no outbox record has this key",
          record: null,
        });
        const failed = await repo.applyPlatformStatus(
          record.key,
          0,
          {
            messageId: "wamid.C1",
            outcome: "failed",
            status: "failed",
            reason: "WhatsApp 131047: Re-engagement message",
          },
          T0 + 2,
        );
        expect(failed.record).toMatchObject({
          state: "failed",
          lastError: "the platform reported the send failed: WhatsApp 131047: Re-engagement message",
        });

        // Accepted (delivered on the send's answer), then reported undeliverable: failed after all.
        const accepted = await sendingRecord("15550007");
        await repo.recordChunkDelivered(accepted.id, 0, ["wamid.D"], T0 + 1, true);
        const undeliverable = await repo.applyPlatformStatus(
          accepted.key,
          0,
          {
            messageId: "wamid.D",
            outcome: "failed",
            status: "failed",
            reason: "WhatsApp 131047: Re-engagement message",
          },
          T0 + 3,
        );
        expect(undeliverable.record).toMatchObject({
          state: "failed",
          lastError:
            "accepted, then reported undeliverable by the platform: WhatsApp 131047: Re-engagement message",
        });
      });

      test("a send of unknown outcome waits for its status, holding its chat, and becomes ambiguous when none comes", async () => {
        const record = await sendingRecord("15550004");
        const [later] = await repo.insert([messageInsert("15550004", "later", WA)], T0);
        expect(
          await repo.awaitPlatformStatus(record.id, "no answer within 10000 ms", T0 + 1, T0 + 1_000),
        ).toBe(true);
        const waiting = await repo.show(record.id);
        expect(waiting).toMatchObject({ state: "sending", nextAttemptAtMs: T0 + 1_000 });
        expect(waiting?.lastError).toContain("awaiting the platform's delivery status");
        expect(await repo.nextDeliverable(T0 + 500, { limit: 10, channels: ["whatsapp"] })).toEqual([]);
        expect(await repo.expireStatusWaits(T0 + 999)).toEqual([]);
        expect(await repo.expireStatusWaits(T0 + 1_000, T0 + 2_000)).toEqual([record.id]);
        expect(await repo.show(record.id)).toMatchObject({ state: "ambiguous", nextAttemptAtMs: T0 + 2_000 });
        expect((await repo.show(record.id))?.lastError).toMatch(/no delivery status came/);
        expect(
          (await repo.nextDeliverable(T0 + 2_000, { limit: 10, channels: ["whatsapp"] })).map((r) => r.id),
        ).toEqual([later!]);
        // A live send is never taken for a wait that ended.
        const live = await sendingRecord("15550005");
        expect(await repo.expireStatusWaits(T0 + 1_000_000)).toEqual([]);
        expect((await repo.show(live.id))?.state).toBe("sending");
      });

      test("recovery leaves interrupted messages of a status channel sending, waiting for their status", async () => {
        const wa = await sendingRecord("15550006");
        const [tg] = await repo.insert([messageInsert("chat-t", "telegram")], T0);
        await repo.markSending(tg!, T0);
        const summary = await repo.recoverInterrupted(
          new Set(),
          T0 + 10,
          undefined,
          new Map([["whatsapp", 600_000]]),
        );
        expect(summary).toEqual({
          requeued: [],
          resumedStreams: [],
          ambiguous: [tg!],
          awaitingStatus: [wa.id],
        });
        expect(await repo.show(wa.id)).toMatchObject({
          state: "sending",
          nextAttemptAtMs: T0 + 10 + 600_000,
        });
        const resolved = await repo.applyPlatformStatus(wa.key, 0, delivered("wamid.R"), T0 + 20);
        expect(resolved.record?.state).toBe("delivered");
      });
    });

    describe("operator actions", () => {
      test("retry, resolve and cancel are recorded with who, when, what and why", async () => {
        const [id] = await repo.insert([messageInsert("chat-a", "hello")], T0);
        await repo.markSending(id!, T0);
        await repo.markAmbiguous(id!, "no answer", T0 + 1);
        const retried = await repo.retry(id!, "operator:ann", T0 + 100, "not in the chat");
        expect(retried).toMatchObject({ state: "pending", attempts: 0, nextAttemptAtMs: T0 + 100 });
        await repo.markSending(id!, T0 + 200);
        await repo.markAmbiguous(id!, "no answer again", T0 + 201);
        const resolved = await repo.resolve(id!, "delivered", "operator:bob", "seen in the chat", T0 + 300);
        expect(resolved.state).toBe("delivered");
        expect(resolved.history.filter((h) => h.actor !== "system")).toEqual([
          { atMs: T0 + 100, actor: "operator:ann", action: "retry", note: "not in the chat" },
          { atMs: T0 + 300, actor: "operator:bob", action: "resolve delivered", note: "seen in the chat" },
        ]);

        const [other] = await repo.insert([messageInsert("chat-a", "later")], T0);
        const cancelled = await repo.cancel(other!, "operator:ann", T0 + 400);
        expect(cancelled.state).toBe("cancelled");
        expect(cancelled.history.at(-1)).toEqual({ atMs: T0 + 400, actor: "operator:ann", action: "cancel" });
        expect((await repo.list({ state: "cancelled" })).map((r) => r.id)).toEqual([other!]);
        expect((await repo.list({ conversationId: "conv-chat-a" })).length).toBe(2);
        expect((await repo.list({ conversationId: "nobody" })).length).toBe(0);
      });

      test("counts per conversation", async () => {
        const [a, b] = await repo.insert(
          [messageInsert("chat-a", "1"), messageInsert("chat-a", "2"), messageInsert("chat-a", "3")],
          T0,
        );
        await repo.markSending(a!, T0);
        await repo.markAmbiguous(a!, "hung", T0);
        await repo.cancel(b!, "operator:ann", T0);
        expect(await repo.counts("conv-chat-a")).toEqual({ waiting: 1, ambiguous: 1 });
        expect(await repo.counts("conv-empty")).toEqual({ waiting: 0, ambiguous: 0 });
      });
    });

    describe("streams and the terminal commit", () => {
      const stream = (runId: string, target = "chat-s") => ({
        runId,
        conversationId: "conv-s",
        channel: "telegram" as const,
        account: "bot-1",
        target,
        markdown: "partial",
      });

      test("a stream previews live only at the head of its target; later answers wait behind it", async () => {
        await repo.insert([messageInsert("chat-q", "earlier")], T0);
        expect(await repo.beginStream(stream("run_q", "chat-q"), T0)).toEqual({
          live: false,
          reason: "queued",
        });
        const live = await repo.beginStream(stream("run_l"), T0);
        expect(live.live).toBe(true);
        await repo.insert([messageInsert("chat-s", "after the stream")], T0);
        expect(await heads()).toEqual(["earlier"]);
        expect(await repo.beginStream(stream("run_l"), T0)).toEqual({ live: false, reason: "unavailable" });
      });

      test("the terminal commit finalises an existing stream, else enqueues the answer once", async () => {
        const commit = (runId: string, state: "completed" | "interrupted" | "superseded", text: string) =>
          backend.transaction((tx) =>
            tx.commitAnswer(
              {
                runId,
                conversationId: "c",
                channel: "telegram",
                account: "bot-1",
                target: "chat-t",
                state,
                text,
              },
              T0,
            ),
          );
        await repo.beginStream(stream("run_s", "chat-s"), T0);
        expect(await commit("run_s", "interrupted", "half an answer")).toBe("stream-finalized");
        expect(await repo.show("run_s:stream")).toMatchObject({
          final: true,
          markdown: "half an answer (stopped)",
        });
        expect(await commit("run_m", "completed", "full answer")).toBe("enqueued");
        expect(await commit("run_m", "completed", "full answer")).toBe("enqueued");
        expect((await repo.list({})).filter((r) => r.runId === "run_m")).toHaveLength(1);
        expect(await commit("run_x", "superseded", "never shown")).toBe("nothing-to-send");
        // The terminal commit won the race: the stream must not open a second answer.
        expect(await repo.beginStream(stream("run_m", "chat-t"), T0)).toEqual({
          live: false,
          reason: "answered",
        });
        expect(await backend.transaction((tx) => tx.finalize("run_nope:stream", "x", T0))).toBe(false);
      });

      test("a terminal commit's prompts follow its answer, each with its buttons; a presentation round-trips", async () => {
        const buttons = [[{ label: "Approve", data: "ap:x:a:tag" }], [{ label: "Deny", data: "ap:x:d:tag" }]];
        const answer = {
          runId: "run_p",
          conversationId: "c",
          channel: "telegram",
          account: "bot-1",
          target: "chat-p",
          state: "awaiting_approval" as const,
          prompts: [{ key: "approval:ap_1:prompt", markdown: "Approve notes_append?", buttons }],
        };
        expect(
          await backend.transaction((tx) => tx.commitAnswer({ ...answer, text: "Let me note it." }, T0)),
        ).toBe("enqueued");
        const records = (await repo.list({})).sort((a, b) => a.ordinal - b.ordinal);
        expect(records.map((r) => [r.key, r.markdown, r.presentation])).toEqual([
          ["run_p:0", "Let me note it.", null],
          ["approval:ap_1:prompt", "Approve notes_append?", { buttons }],
        ]);
        // Without answer text the prompt still goes out, once.
        await backend.transaction((tx) =>
          tx.commitAnswer(
            { ...answer, runId: "run_q", text: "", prompts: [{ ...answer.prompts[0]!, key: "k2" }] },
            T0,
          ),
        );
        await backend.transaction((tx) =>
          tx.commitAnswer(
            { ...answer, runId: "run_q", text: "", prompts: [{ ...answer.prompts[0]!, key: "k2" }] },
            T0,
          ),
        );
        expect((await repo.list({})).filter((r) => r.runId === "run_q").map((r) => r.key)).toEqual(["k2"]);
        await repo.insert(
          [{ ...messageInsert("chat-p", "Approved"), presentation: { editOf: "approval:ap_1:prompt" } }],
          T0,
        );
        expect((await repo.list({})).find((r) => r.markdown === "Approved")?.presentation).toEqual({
          editOf: "approval:ap_1:prompt",
        });
      });

      test("a stream is delivered only when the chat shows its final text", async () => {
        const live = await repo.beginStream(stream("run_f"), T0);
        if (!live.live) throw new Error("expected live");
        expect(await repo.markDelivered(live.record.id, { messageIds: ["1"] }, T0, "partial")).toBe(false);
        await backend.transaction((tx) => tx.finalize("run_f:stream", "final", T0));
        expect(await repo.markDelivered(live.record.id, { messageIds: ["1"] }, T0, "partial")).toBe(false);
        expect(await repo.markDelivered(live.record.id, { messageIds: ["1"] }, T0, "final")).toBe(true);
      });
    });

    describe("media records", () => {
      const photo = {
        blobId: "a".repeat(64),
        filename: "chart.png",
        mimeType: "image/png",
        sizeBytes: 2048,
      };

      test("a file and its caption round-trip; an empty caption is allowed, a stream with a file is not", async () => {
        const [id] = await repo.insert(
          [messageInsert("chat-m", "the chart", { key: "run_m:file:1", runId: "run_m", media: photo })],
          T0,
        );
        const [bare] = await repo.insert(
          [messageInsert("chat-m", "", { key: "run_m:file:2", runId: "run_m", media: photo })],
          T0,
        );
        const record = await repo.show(id!);
        expect(record?.kind === "message" && record.media).toEqual(photo);
        expect(record?.markdown).toBe("the chart");
        expect((await repo.show(bare!))?.markdown).toBe("");
        await expectError(
          repo.insert([{ ...messageInsert("chat-m", "x"), kind: "stream", media: photo }], T0),
          "input_invalid",
          /only message records carry files/,
        );
        await expectError(repo.insert([messageInsert("chat-m", " ")], T0), "input_invalid", /no text/);
        const text = (await repo.insert([messageInsert("chat-m", "words")], T0))[0]!;
        const plain = await repo.show(text);
        expect(plain?.kind === "message" && plain.media).toBeNull();
      });

      test("text and files of one reply keep their order, one at a time per chat", async () => {
        await backend.transaction((tx) =>
          tx.insert(
            [
              messageInsert("chat-o", "before", { key: "run_o:a", runId: "run_o" }),
              messageInsert("chat-o", "", { key: "run_o:file:1", runId: "run_o", media: photo }),
              messageInsert("chat-o", "after", { key: "run_o:b", runId: "run_o" }),
            ],
            T0,
          ),
        );
        const order: string[] = [];
        for (let i = 0; i < 3; i++) {
          const [head] = await repo.nextDeliverable(T0, { limit: 10, channels: ALL });
          order.push(head!.key);
          await repo.markSending(head!.id, T0);
          expect(await repo.nextDeliverable(T0, { limit: 10, channels: ALL })).toEqual([]);
          await repo.markDelivered(head!.id, { messageIds: [String(i)] }, T0);
        }
        expect(order).toEqual(["run_o:a", "run_o:file:1", "run_o:b"]);
      });

      test("a file a run sent earlier does not stop its answer from streaming after it", async () => {
        const [file] = await repo.insert(
          [messageInsert("chat-f", "", { key: "run_f2:file:1", runId: "run_f2", media: photo })],
          T0,
        );
        const stream = {
          runId: "run_f2",
          conversationId: "conv-f",
          channel: "telegram" as const,
          account: "bot-1",
          target: "chat-f",
          markdown: "partial",
        };
        expect(await repo.beginStream(stream, T0)).toEqual({ live: false, reason: "queued" });
        await repo.markSending(file!, T0);
        await repo.markDelivered(file!, { messageIds: ["9"] }, T0);
        expect((await repo.beginStream(stream, T0)).live).toBe(true);
      });

      test("an upload interrupted by a crash is ambiguous, unless the channel's sends are idempotent", async () => {
        const [telegram] = await repo.insert([messageInsert("chat-k", "", { media: photo })], T0);
        const [discord] = await repo.insert(
          [messageInsert("chat-k", "", { media: photo, channel: "discord" })],
          T0,
        );
        await repo.markSending(telegram!, T0);
        await repo.markSending(discord!, T0);
        const summary = await repo.recoverInterrupted(new Set(["discord"]), T0 + 10);
        expect(summary.ambiguous).toEqual([telegram!]);
        expect(summary.requeued).toEqual([discord!]);
        const requeued = await repo.show(discord!);
        expect(requeued?.kind === "message" && requeued.media).toEqual(photo);
      });
    });
  });
}
