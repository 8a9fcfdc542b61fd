import { describe, expect, test } from "bun:test";
import { BlobJanitor } from "../../src/runtime/blob-cleanup.ts";
import type { StoreBackend } from "../../src/store/backend.ts";
import { messageInsert } from "../outbox/support/records.ts";
import { recordingLogger } from "../support/logger.ts";
import { admitRequest } from "./conformance.ts";

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

export interface BlobCleanupHarness {
  backend: StoreBackend;
  close(): Promise<void>;
}

/**
 * Blob cleanup against a real backend (its blob store and its reference query): what pending
 * work needs always stays; what /new or a purge stopped pointing at goes at once; what nothing
 * points at goes after the grace; history goes only by retention.
 */
export function runBlobCleanupConformance(engine: string, open: () => Promise<BlobCleanupHarness>): void {
  describe(`blob cleanup conformance (${engine})`, () => {
    test("pinned, kept, released, unreferenced and retained blobs", async () => {
      const { backend, close } = await open();
      try {
        const { runtime: store, blobs } = backend;
        let now = Date.now();
        const janitor = (retentionMs: number | null = null) =>
          new BlobJanitor({
            blobs,
            references: () => backend.blobReferences(),
            conversationBlobIds: (id) => backend.conversationBlobIds(id),
            now: () => now,
            logger: recordingLogger(),
            graceMs: HOUR_MS,
            retentionMs,
          });
        const put = async (text: string) =>
          (
            await blobs.put(
              (async function* () {
                yield new TextEncoder().encode(text);
              })(),
              { maxBytes: 1000 },
            )
          ).id;
        /** A conversation whose one input shows `blobId` (and `imageBlobId`); its run finished unless `active`. */
        const withFile = async (
          conversationId: string,
          blobId: string,
          imageBlobId?: string,
          active = false,
        ) => {
          const file = { type: "file" as const, ref: `ref-${conversationId}`, kind: "photo" as const };
          const admitted = await store.admit(
            admitRequest(conversationId, `k-${conversationId}`, { parts: [file] }),
          );
          const acquired = await store.acquireRun({
            runId: admitted.runId,
            owner: "w",
            nowMs: now,
            leaseMs: DAY_MS * 10,
          });
          if (!acquired) throw new Error("not acquired");
          await store.saveInputParts(acquired.fence, admitted.inputMessageId, [
            {
              ...file,
              prepared: {
                status: "fetched",
                blobId,
                mediaType: "image/jpeg",
                sizeBytes: 1,
                ...(imageBlobId ? { imageBlobId } : {}),
              },
            },
          ]);
          if (!active) {
            await store.commitTerminal({
              fence: acquired.fence,
              state: "completed",
              assistantParts: [{ type: "text", text: "seen" }],
              nowMs: now,
            });
          }
        };
        const present = async (...ids: string[]) =>
          Promise.all(ids.map(async (id) => (await blobs.stat(id)) !== null));

        const shared = await put("shared photo");
        const scaled = await put("scaled copy");
        const leftByNew = await put("photo of the conversation left with /new");
        const pending = await put("photo of a run still preparing");
        const orphan = await put("stored, then its run was lost");
        await withFile("forgotten", shared, scaled);
        await withFile("other", shared);
        await withFile("renewed", leftByNew);
        await withFile("busy", pending, undefined, true);

        expect(await backend.conversationBlobIds("forgotten")).toEqual(new Set([shared, scaled]));
        expect((await backend.blobReferences()).pinned).toEqual(new Set([pending]));

        // Nothing points at `orphan`: within the grace (its row may be on its way) it stays, then goes.
        expect(await janitor().sweep()).toMatchObject({ removed: 0 });
        expect(await present(orphan)).toEqual([true]);
        now += 2 * HOUR_MS;
        expect(await janitor().sweep()).toMatchObject({ removed: 1 });
        expect(await present(orphan)).toEqual([false]);
        expect(await present(shared, scaled, leftByNew, pending)).toEqual([true, true, true, true]);

        // /new: the conversation's files go at once, unless another conversation shows them too.
        const releasedByNew = await janitor().collect("renewed");
        await store.saveConversationSettings("renewed", { mediaReleased: true }, now);
        await janitor().sweep(releasedByNew);
        expect(await present(leftByNew)).toEqual([false]);
        expect(await store.listMessages("renewed", { afterOrder: 0, limit: 10 })).toMatchObject({
          items: expect.arrayContaining([expect.anything()]),
        });

        // /forget: the purge drops the rows; the scaled copy goes, the shared photo stays.
        const releasedByPurge = await janitor().collect("forgotten");
        expect(await store.purgeConversation("forgotten", { nowMs: now })).toEqual({ outcome: "purged" });
        await janitor().sweep(releasedByPurge);
        expect(await present(shared, scaled)).toEqual([true, false]);

        // Retention removes history older than it, never what a pending input needs.
        now += 3 * DAY_MS;
        await janitor(DAY_MS).sweep();
        expect(await present(shared, pending)).toEqual([false, true]);
        // Without retention, history stays however old.
        const kept = await put("history without retention");
        await withFile("history", kept);
        now += 30 * DAY_MS;
        await janitor(null).sweep();
        expect(await present(kept, pending)).toEqual([true, true]);
      } finally {
        await close();
      }
    }, 30_000);

    test("a file the outbox has yet to send stays pinned until its record is delivered", async () => {
      const { backend, close } = await open();
      try {
        const { id: blobId } = await backend.blobs.put(
          (async function* () {
            yield new TextEncoder().encode("a chart the agent sends");
          })(),
          { maxBytes: 1000 },
        );
        const media = { blobId, filename: "chart.png", mimeType: "image/png", sizeBytes: 23 };
        const now = Date.now();
        const [id] = await backend.outbox.insert([messageInsert("chat-f", "", { media })], now);
        expect((await backend.blobReferences()).pinned).toEqual(new Set([blobId]));
        await backend.outbox.markSending(id!, now);
        expect((await backend.blobReferences()).pinned).toEqual(new Set([blobId]));
        await backend.outbox.markDelivered(id!, { messageIds: ["m1"] }, now);
        expect((await backend.blobReferences()).pinned).toEqual(new Set());
      } finally {
        await close();
      }
    });

    test("/forget removes a file the conversation was sent (an /export) at once, not after the grace", async () => {
      const { backend, close } = await open();
      try {
        let now = Date.now();
        const janitor = new BlobJanitor({
          blobs: backend.blobs,
          references: () => backend.blobReferences(),
          conversationBlobIds: (id) => backend.conversationBlobIds(id),
          now: () => now,
          logger: recordingLogger(),
          graceMs: HOUR_MS,
        });
        const { id: blobId } = await backend.blobs.put(
          (async function* () {
            yield new TextEncoder().encode("# Conversation conv-chat-x\n\nmy secret is marmalade\n");
          })(),
          { maxBytes: 1000 },
        );
        const media = { blobId, filename: "conversation.md", mimeType: "text/markdown", sizeBytes: 50 };
        const [id] = await backend.outbox.insert([messageInsert("chat-x", "the export", { media })], now);
        await backend.outbox.markSending(id!, now);
        await backend.outbox.markDelivered(id!, { messageIds: ["m1"] }, now);
        expect(await backend.conversationBlobIds("conv-chat-x")).toEqual(new Set([blobId]));
        now += 60_000;
        const released = await janitor.collect("conv-chat-x");
        expect(await backend.runtime.purgeConversation("conv-chat-x", { nowMs: now })).toMatchObject({
          outcome: "purged",
        });
        await janitor.sweep(released);
        expect(await backend.blobs.stat(blobId)).toBeNull();
      } finally {
        await close();
      }
    });

    test("an /export kept for download stays through /new and retention until its keepUntilMs; a purge ends the promise", async () => {
      const { backend, close } = await open();
      try {
        let now = Date.now();
        const janitor = new BlobJanitor({
          blobs: backend.blobs,
          references: () => backend.blobReferences(),
          conversationBlobIds: (id) => backend.conversationBlobIds(id),
          now: () => now,
          logger: recordingLogger(),
          graceMs: HOUR_MS,
          retentionMs: HOUR_MS,
        });
        const exportOf = async (chat: string) => {
          const { id: blobId } = await backend.blobs.put(
            (async function* () {
              yield new TextEncoder().encode(`# Conversation conv-${chat}\n`);
            })(),
            { maxBytes: 1000 },
          );
          const media = {
            blobId,
            filename: "conversation.md",
            mimeType: "text/markdown",
            sizeBytes: 30,
            keepUntilMs: now + DAY_MS,
          };
          const [id] = await backend.outbox.insert([messageInsert(chat, "the export", { media })], now);
          await backend.outbox.markSending(id!, now);
          await backend.outbox.markDelivered(id!, { messageIds: ["m1"] }, now);
          return blobId;
        };
        const kept = await exportOf("chat-k");
        const forgotten = await exportOf("chat-g");
        expect((await backend.blobReferences()).keptUntil).toEqual(
          new Map([
            [kept, now + DAY_MS],
            [forgotten, now + DAY_MS],
          ]),
        );
        // /new: released at once, yet kept; retention and the grace pass, yet kept.
        now += 2 * HOUR_MS;
        await janitor.sweep(await janitor.collect("conv-chat-k"));
        expect(await backend.blobs.stat(kept)).not.toBeNull();
        // /forget: the purge clears the record's media, and the promise with it.
        const released = await janitor.collect("conv-chat-g");
        await backend.runtime.purgeConversation("conv-chat-g", { nowMs: now });
        await janitor.sweep(released);
        expect(await backend.blobs.stat(forgotten)).toBeNull();
        expect([...((await backend.blobReferences()).keptUntil ?? new Map()).keys()]).toEqual([kept]);
        // Past its lifetime it goes like any file nothing points at.
        now += DAY_MS;
        await janitor.sweep();
        expect(await backend.blobs.stat(kept)).toBeNull();
      } finally {
        await close();
      }
    });

    test("a put of bytes already stored renews the blob, so a sweep leaves it", async () => {
      const { backend, close } = await open();
      try {
        const once = async () =>
          backend.blobs.put(
            (async function* () {
              yield new TextEncoder().encode("sent again");
            })(),
            { maxBytes: 100 },
          );
        const first = await once();
        const [before] = await Array.fromAsync(backend.blobs.list());
        await Bun.sleep(20);
        await once();
        const [after] = await Array.fromAsync(backend.blobs.list());
        expect(after?.id).toBe(first.id);
        expect(after!.storedAtMs).toBeGreaterThan(before!.storedAtMs);
      } finally {
        await close();
      }
    });
  });
}
