import { describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { isSwitchboardError } from "../../src/errors.ts";
import { BLOB_HEAD_BYTES, type BlobStore } from "../../src/runtime/blobs.ts";

export interface BlobHarness {
  blobs: BlobStore;
  close(): Promise<void>;
}

async function* chunks(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** What every BlobStore must do, run once per engine. */
export function runBlobConformance(engine: string, open: () => Promise<BlobHarness>): void {
  const withBlobs = async (fn: (blobs: BlobStore) => Promise<void>) => {
    const harness = await open();
    try {
      await fn(harness.blobs);
    } finally {
      await harness.close();
    }
  };

  describe(`blob store conformance (${engine})`, () => {
    test("a put in odd-sized chunks is read back byte for byte under its sha256", async () => {
      await withBlobs(async (blobs) => {
        const bytes = new Uint8Array(randomBytes(2_500_000));
        const stored = await blobs.put(chunks(bytes, 65_537), { maxBytes: 3_000_000 });
        expect(stored.id).toBe(sha256(bytes));
        expect(stored.sizeBytes).toBe(bytes.byteLength);
        expect(stored.head).toEqual(bytes.subarray(0, BLOB_HEAD_BYTES));
        expect(await blobs.stat(stored.id)).toEqual({ sizeBytes: bytes.byteLength });
        expect(await blobs.read(stored.id)).toEqual(bytes);
      });
    });

    test("the same bytes twice are one blob; an empty file is a blob too", async () => {
      await withBlobs(async (blobs) => {
        const bytes = new TextEncoder().encode("hello, blob");
        const a = await blobs.put(chunks(bytes, 3), { maxBytes: 100 });
        const b = await blobs.put(chunks(bytes, 5), { maxBytes: 100 });
        expect(b.id).toBe(a.id);
        expect(await blobs.read(a.id)).toEqual(bytes);
        const empty = await blobs.put(chunks(new Uint8Array(0), 1), { maxBytes: 100 });
        expect(empty.id).toBe(sha256(new Uint8Array(0)));
        expect(await blobs.read(empty.id)).toEqual(new Uint8Array(0));
      });
    });

    test("list yields every blob once, in id order, with its size; a deleted one is gone", async () => {
      await withBlobs(async (blobs) => {
        const before = Date.now();
        const ids: string[] = [];
        for (let i = 0; i < 12; i++) {
          const stored = await blobs.put(chunks(new TextEncoder().encode(`blob ${i}`.repeat(i + 1)), 7), {
            maxBytes: 1000,
          });
          ids.push(stored.id);
        }
        await blobs.delete(ids[3]!);
        const listed = await Array.fromAsync(blobs.list());
        expect(listed.map((b) => b.id)).toEqual(ids.filter((_, i) => i !== 3).sort());
        for (const blob of listed) {
          expect(blob.sizeBytes).toBe((await blobs.stat(blob.id))!.sizeBytes);
          expect(blob.storedAtMs).toBeGreaterThanOrEqual(before - 1000);
          expect(blob.storedAtMs).toBeLessThanOrEqual(Date.now() + 1000);
        }
      });
    });

    test("over the limit: blob_too_large and nothing is kept", async () => {
      await withBlobs(async (blobs) => {
        const bytes = new Uint8Array(randomBytes(10_000));
        const error = await blobs.put(chunks(bytes, 1000), { maxBytes: 9_999 }).catch((e: unknown) => e);
        expect(isSwitchboardError(error, "blob_too_large")).toBe(true);
        expect(await blobs.stat(sha256(bytes))).toBeNull();
        const exact = await blobs.put(chunks(bytes, 1000), { maxBytes: 10_000 });
        expect(exact.sizeBytes).toBe(10_000);
      });
    });

    test("a source that fails midway leaves nothing, and the error is the source's", async () => {
      await withBlobs(async (blobs) => {
        async function* broken(): AsyncIterable<Uint8Array> {
          yield new Uint8Array(1000);
          throw new Error("connection reset");
        }
        await expect(blobs.put(broken(), { maxBytes: 10_000 })).rejects.toThrow("connection reset");
        expect(await blobs.stat(sha256(new Uint8Array(1000)))).toBeNull();
      });
    });

    test("unknown and malformed ids read as absent; delete removes once", async () => {
      await withBlobs(async (blobs) => {
        expect(await blobs.read("0".repeat(64))).toBeNull();
        expect(await blobs.read("../../etc/passwd")).toBeNull();
        expect(await blobs.stat("nope")).toBeNull();
        const stored = await blobs.put(chunks(new Uint8Array([1, 2, 3]), 2), { maxBytes: 10 });
        expect(await blobs.delete(stored.id)).toBe(true);
        expect(await blobs.delete(stored.id)).toBe(false);
        expect(await blobs.read(stored.id)).toBeNull();
      });
    });
  });
}
