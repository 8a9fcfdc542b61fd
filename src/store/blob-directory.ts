import { randomUUID } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { type BlobListing, type BlobStore, isBlobId, type StoredBlob } from "../runtime/blobs.ts";
import { intake } from "./blob-intake.ts";

/**
 * Blobs as files under `dir`: `<dir>/<first two hex digits>/<sha256>`. A put streams into
 * `<dir>/tmp/`, fsyncs, then renames into place, so a crash leaves either no blob or a whole one
 * (and at worst a temp file, removed at the next open). A file's modification time is when it
 * was last put (set from `now`, so tests can age blobs).
 */
export class DirectoryBlobStore implements BlobStore {
  private readonly tmp: string;

  constructor(
    private readonly dir: string,
    private readonly now: () => number = Date.now,
  ) {
    this.tmp = join(dir, "tmp");
  }

  /** Removes temp files a crashed put left behind. Call before any put is under way. */
  async sweepTemp(): Promise<void> {
    await rm(this.tmp, { recursive: true, force: true });
    await mkdir(this.tmp, { recursive: true, mode: 0o700 });
  }

  async put(source: AsyncIterable<Uint8Array>, options: { maxBytes: number }): Promise<StoredBlob> {
    await mkdir(this.tmp, { recursive: true, mode: 0o700 });
    const temp = join(this.tmp, randomUUID());
    const file = await open(temp, "wx", 0o600);
    let stored: StoredBlob;
    try {
      stored = await intake(source, options.maxBytes, async (chunk) => {
        await file.write(chunk);
      });
      await file.sync();
    } catch (error) {
      await file.close();
      await unlink(temp).catch(() => {});
      throw error;
    }
    await file.close();
    const target = this.pathOf(stored.id);
    await mkdir(join(this.dir, stored.id.slice(0, 2)), { recursive: true, mode: 0o700 });
    const at = new Date(this.now());
    await utimes(temp, at, at);
    await rename(temp, target);
    return stored;
  }

  async *list(): AsyncIterable<BlobListing> {
    const shards = (await readdir(this.dir).catch(() => [] as string[])).filter((d) =>
      /^[0-9a-f]{2}$/.test(d),
    );
    for (const shard of shards.sort()) {
      const names = await readdir(join(this.dir, shard)).catch(() => [] as string[]);
      for (const id of names.filter(isBlobId).sort()) {
        const info = await stat(this.pathOf(id)).catch(() => null);
        // Gone between the listing and now (removed by another sweep): nothing to report.
        if (info) yield { id, sizeBytes: info.size, storedAtMs: info.mtimeMs };
      }
    }
  }

  async read(id: string): Promise<Uint8Array | null> {
    if (!isBlobId(id)) return null;
    try {
      return new Uint8Array(await readFile(this.pathOf(id)));
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async stat(id: string): Promise<{ sizeBytes: number } | null> {
    if (!isBlobId(id)) return null;
    try {
      return { sizeBytes: (await stat(this.pathOf(id))).size };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async delete(id: string): Promise<boolean> {
    if (!isBlobId(id)) return false;
    try {
      await unlink(this.pathOf(id));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  localPath(id: string): string {
    return this.pathOf(id);
  }

  private pathOf(id: string): string {
    return join(this.dir, id.slice(0, 2), id);
  }
}

function isMissing(error: unknown): boolean {
  return (error as { code?: string }).code === "ENOENT";
}
