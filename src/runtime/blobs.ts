/**
 * Content-addressed file storage for media: a blob's id is the hex sha256 of its bytes, so the
 * same file stored twice is one blob and a put is idempotent. SQLite deployments keep blobs in a
 * directory beside the database; PostgreSQL keeps them in a table, so a standby on another host
 * has them too. Both pass test/store/blob-conformance.ts.
 */
export interface BlobStore {
  /**
   * Streams `source` into the store, never holding it whole. Throws `blob_too_large` (nothing
   * kept) as soon as more than `maxBytes` arrive, and rethrows the source's error (nothing kept).
   */
  put(source: AsyncIterable<Uint8Array>, options: { maxBytes: number }): Promise<StoredBlob>;
  /** The blob's bytes; null when there is no such blob. */
  read(id: string): Promise<Uint8Array | null>;
  /**
   * The file that holds the blob, for a reader that takes a path (the image scaler reads it
   * without a copy in memory); absent on a store that keeps blobs elsewhere.
   */
  localPath?(id: string): string;
  /** Size of a stored blob; null when there is none. */
  stat(id: string): Promise<{ sizeBytes: number } | null>;
  /** Removes a blob; false when there was none. */
  delete(id: string): Promise<boolean>;
  /**
   * Every stored blob, in id order, a page at a time (for cleanup). A put of bytes already stored
   * renews `storedAtMs`, so a blob someone just put is never taken for an old one.
   */
  list(): AsyncIterable<BlobListing>;
}

export interface BlobListing {
  id: string;
  sizeBytes: number;
  /** When the blob was last put (ms since the epoch). */
  storedAtMs: number;
}

export interface StoredBlob {
  /** Lower-case hex sha256 of the bytes. */
  id: string;
  sizeBytes: number;
  /** The first bytes (at most BLOB_HEAD_BYTES), for sniffing the type without reading it back. */
  head: Uint8Array;
}

/** Enough for every signature file-type knows. */
export const BLOB_HEAD_BYTES = 4100;

/** True for a well-formed blob id (64 lower-case hex digits). */
export function isBlobId(id: string): boolean {
  return /^[0-9a-f]{64}$/.test(id);
}

/** Bytes already in memory as the chunk stream `BlobStore.put` takes. */
export async function* bytesSource(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
