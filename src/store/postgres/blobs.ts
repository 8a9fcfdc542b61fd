import { randomUUID } from "node:crypto";
import type { SQL } from "bun";
import { type BlobListing, type BlobStore, isBlobId, type StoredBlob } from "../../runtime/blobs.ts";
import { intake } from "../blob-intake.ts";

/** Rows hold at most this much, so a put never buffers more than one chunk. */
const CHUNK_BYTES = 1024 * 1024;
const STAGING_PREFIX = "staging:";
/** Blobs listed per query. */
const LIST_PAGE = 500;

/**
 * Blobs in PostgreSQL (`blobs` + `blob_chunks`), so every gateway on the database, a standby on
 * another host included, reads the same files. A put inserts chunks under a staging id as they
 * arrive, then in one transaction either renames them to the blob id or, when the blob exists
 * already, drops them.
 */
export class PostgresBlobStore implements BlobStore {
  constructor(
    private readonly sql: SQL,
    private readonly now: () => number = Date.now,
  ) {}

  /** Drops chunks of puts that a crash cut short. Staging ids are random, so only dead puts match. */
  async sweepStaging(olderThanMs: number): Promise<void> {
    await this.sql`DELETE FROM blob_chunks
      WHERE blob_id LIKE ${`${STAGING_PREFIX}%`} AND created_at_ms < ${this.now() - olderThanMs}`;
  }

  async put(source: AsyncIterable<Uint8Array>, options: { maxBytes: number }): Promise<StoredBlob> {
    const staging = `${STAGING_PREFIX}${randomUUID()}`;
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    let idx = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      const data = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await this.sql`INSERT INTO blob_chunks (blob_id, idx, data, created_at_ms)
        VALUES (${staging}, ${idx}, ${data}, ${this.now()})`;
      idx += 1;
    };
    let stored: StoredBlob;
    try {
      stored = await intake(source, options.maxBytes, async (chunk) => {
        let rest = chunk;
        while (rest.byteLength > 0) {
          const take = rest.subarray(0, CHUNK_BYTES - pendingBytes);
          pending.push(take);
          pendingBytes += take.byteLength;
          rest = rest.subarray(take.byteLength);
          if (pendingBytes === CHUNK_BYTES) await flush();
        }
      });
      await flush();
    } catch (error) {
      await this.sql`DELETE FROM blob_chunks WHERE blob_id = ${staging}`.catch(() => {});
      throw error;
    }
    await this.sql.begin(async (tx) => {
      const inserted = await tx`INSERT INTO blobs (id, size_bytes, created_at_ms)
        VALUES (${stored.id}, ${stored.sizeBytes}, ${this.now()})
        ON CONFLICT (id) DO NOTHING RETURNING id`;
      if (inserted.length === 1) {
        await tx`UPDATE blob_chunks SET blob_id = ${stored.id} WHERE blob_id = ${staging}`;
      } else {
        await tx`DELETE FROM blob_chunks WHERE blob_id = ${staging}`;
        await tx`UPDATE blobs SET created_at_ms = ${this.now()} WHERE id = ${stored.id}`;
      }
    });
    return stored;
  }

  async read(id: string): Promise<Uint8Array | null> {
    if (!isBlobId(id)) return null;
    const [blob] = await this.sql<Array<{ size_bytes: string | number }>>`
      SELECT size_bytes FROM blobs WHERE id = ${id}`;
    if (!blob) return null;
    const out = new Uint8Array(Number(blob.size_bytes));
    let at = 0;
    // One chunk per query keeps the driver's buffers to one chunk at a time.
    for (let idx = 0; at < out.byteLength; idx++) {
      const [row] = await this.sql<Array<{ data: Uint8Array }>>`
        SELECT data FROM blob_chunks WHERE blob_id = ${id} AND idx = ${idx}`;
      if (!row)
        throw new Error(`blob ${id} is missing chunk ${idx}: the blob_chunks table was changed by hand`);
      out.set(row.data, at);
      at += row.data.byteLength;
    }
    return out;
  }

  async stat(id: string): Promise<{ sizeBytes: number } | null> {
    if (!isBlobId(id)) return null;
    const [blob] = await this.sql<Array<{ size_bytes: string | number }>>`
      SELECT size_bytes FROM blobs WHERE id = ${id}`;
    return blob ? { sizeBytes: Number(blob.size_bytes) } : null;
  }

  async *list(): AsyncIterable<BlobListing> {
    let after = "";
    for (;;) {
      const page = await this.sql<
        Array<{ id: string; size_bytes: string | number; created_at_ms: string | number }>
      >`
        SELECT id, size_bytes, created_at_ms FROM blobs WHERE id > ${after} ORDER BY id LIMIT ${LIST_PAGE}`;
      for (const row of page) {
        yield { id: row.id, sizeBytes: Number(row.size_bytes), storedAtMs: Number(row.created_at_ms) };
      }
      if (page.length < LIST_PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }

  async delete(id: string): Promise<boolean> {
    if (!isBlobId(id)) return false;
    return await this.sql.begin(async (tx) => {
      const deleted = await tx`DELETE FROM blobs WHERE id = ${id} RETURNING id`;
      await tx`DELETE FROM blob_chunks WHERE blob_id = ${id}`;
      return deleted.length === 1;
    });
  }
}
