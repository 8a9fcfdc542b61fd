import type { Logger } from "../util/log.ts";
import type { BlobListing, BlobStore } from "./blobs.ts";
import type { MessagePart } from "./types.ts";

/**
 * Which blobs the rows of the store still point at, read by each engine's `blobReferences`
 * (src/store/{sqlite,postgres}/blob-references.ts).
 */
export interface BlobReferences {
  /**
   * Blobs pending work needs: inputs of runs not finished yet, outgoing files not delivered yet.
   * Never removed, whatever their age.
   */
  pinned: ReadonlySet<string>;
  /**
   * Blobs the messages of live conversations show (history). Removed only by retention. A
   * conversation left with /new or purged is not live.
   */
  kept: ReadonlySet<string>;
  /**
   * Blobs promised to stay until an instant (ms), whatever happens to their conversation: an
   * /export's download link. Neither /new, the grace nor retention removes them before it.
   */
  keptUntil?: ReadonlyMap<string, number>;
}

export interface BlobCleanupPolicy {
  nowMs: number;
  /**
   * A blob put within this long is kept even when nothing points at it yet: a file being
   * prepared is stored before the row that records it.
   */
  graceMs: number;
  /** SWITCHBOARD_BLOB_RETENTION_DAYS in ms: history blobs put longer ago go too; null: kept. */
  retentionMs: number | null;
  /**
   * Blobs a /new or purge stopped pointing at, at `atMs`: removed without waiting out the grace
   * unless something else points at them or put them again since (another chat sending the same
   * bytes).
   */
  released?: ReleasedBlobs;
}

export interface ReleasedBlobs {
  ids: ReadonlySet<string>;
  atMs: number;
}

/** Why a blob goes, for the log; null: it stays. */
export function blobRemoval(
  blob: BlobListing,
  references: BlobReferences,
  policy: BlobCleanupPolicy,
): "unreferenced" | "retention" | null {
  if (references.pinned.has(blob.id)) return null;
  if ((references.keptUntil?.get(blob.id) ?? Number.NEGATIVE_INFINITY) > policy.nowMs) return null;
  if (references.kept.has(blob.id)) {
    if (policy.retentionMs === null) return null;
    return blob.storedAtMs < policy.nowMs - policy.retentionMs ? "retention" : null;
  }
  const released = policy.released;
  if (released?.ids.has(blob.id) && blob.storedAtMs <= released.atMs) return "unreferenced";
  return blob.storedAtMs < policy.nowMs - policy.graceMs ? "unreferenced" : null;
}

/** Blob ids a message's parts point at: a fetched attachment and its scaled image. */
export function blobIdsOfParts(parts: readonly MessagePart[]): string[] {
  const ids: string[] = [];
  for (const part of parts) {
    if (part.type !== "file" || part.prepared?.status !== "fetched") continue;
    ids.push(part.prepared.blobId);
    if (part.prepared.imageBlobId) ids.push(part.prepared.imageBlobId);
  }
  return ids;
}

export interface BlobSweepResult {
  removed: number;
  removedBytes: number;
  kept: number;
}

export interface BlobJanitorOptions {
  blobs: BlobStore;
  /** The engine's reference query; read after the listing, so a row saved meanwhile counts. */
  references(): Promise<BlobReferences>;
  /** Blob ids of one conversation's messages and outgoing files (read before /new or a purge drops them). */
  conversationBlobIds(conversationId: string): Promise<ReadonlySet<string>>;
  now(): number;
  logger: Logger;
  /** Default 1 hour: longer than preparing a file takes (3 downloads of 60 s, a transcription). */
  graceMs?: number;
  /** SWITCHBOARD_BLOB_RETENTION_DAYS in ms; null or absent: history blobs are kept. */
  retentionMs?: number | null;
}

export const DEFAULT_BLOB_GRACE_MS = 60 * 60 * 1000;

/**
 * Removes blobs nothing needs any more: after /new and /forget, at start, and periodically (with
 * retention). Sweeps run one at a time; a failed sweep is logged and changes nothing else, and the
 * next one finds what it left, so cleanup is idempotent and a crash mid-sweep loses nothing.
 */
export class BlobJanitor {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: BlobJanitorOptions) {}

  /**
   * Blob ids of `conversationId`, read before /new or a purge drops them, for `sweep(released)`
   * after. Never throws (a failure leaves them to the grace rule).
   */
  async collect(conversationId: string): Promise<ReleasedBlobs> {
    const atMs = this.options.now();
    try {
      return { ids: await this.options.conversationBlobIds(conversationId), atMs };
    } catch (error) {
      this.options.logger.warn("blobs.collect_failed", { conversationId, error: String(error) });
      return { ids: new Set(), atMs };
    }
  }

  /** One sweep, after any in progress. Never throws: a failure is logged and left for the next. */
  sweep(released?: ReleasedBlobs): Promise<BlobSweepResult | null> {
    const next = this.chain.then(() => this.sweepNow(released));
    this.chain = next.catch(() => {});
    return next.catch((error: unknown) => {
      this.options.logger.error("blobs.sweep_failed", { error: String(error) });
      return null;
    });
  }

  private async sweepNow(released: ReleasedBlobs | undefined): Promise<BlobSweepResult> {
    const { blobs, logger } = this.options;
    const listed: BlobListing[] = [];
    for await (const blob of blobs.list()) listed.push(blob);
    const references = await this.options.references();
    const policy: BlobCleanupPolicy = {
      nowMs: this.options.now(),
      graceMs: this.options.graceMs ?? DEFAULT_BLOB_GRACE_MS,
      retentionMs: this.options.retentionMs ?? null,
      ...(released ? { released } : {}),
    };
    const result: BlobSweepResult = { removed: 0, removedBytes: 0, kept: 0 };
    for (const blob of listed) {
      const why = blobRemoval(blob, references, policy);
      if (why === null) {
        result.kept += 1;
        continue;
      }
      if (await blobs.delete(blob.id)) {
        result.removed += 1;
        result.removedBytes += blob.sizeBytes;
        logger.debug("blobs.removed", { blobId: blob.id, reason: why, sizeBytes: blob.sizeBytes });
      }
    }
    if (result.removed > 0) logger.info("blobs.swept", { ...result });
    return result;
  }
}
