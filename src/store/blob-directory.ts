import { randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { type BlobStore, isBlobId, type StoredBlob } from "../runtime/blobs.ts";
import { intake } from "./blob-intake.ts";

/**
 * Blobs as files under `dir`: `<dir>/<first two hex digits>/<sha256>`. A put streams into
 * `<dir>/tmp/`, fsyncs, then renames into place, so a crash leaves either no blob or a whole one
 * (and at worst a temp file, removed at the next open).
 */
export class DirectoryBlobStore implements BlobStore {
  private readonly tmp: string;

  constructor(private readonly dir: string) {
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
    await rename(temp, target);
    return stored;
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

  private pathOf(id: string): string {
    return join(this.dir, id.slice(0, 2), id);
  }
}

function isMissing(error: unknown): boolean {
  return (error as { code?: string }).code === "ENOENT";
}
