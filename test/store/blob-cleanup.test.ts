import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type BlobReferences, blobRemoval } from "../../src/runtime/blob-cleanup.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteBackend } from "../../src/store/sqlite/backend.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runBlobCleanupConformance } from "./blob-cleanup-conformance.ts";

useTestServer();

runBlobCleanupConformance("sqlite", async () => {
  const dir = tempDir();
  const backend = openSqliteBackend(join(dir.path, "db.sqlite"));
  return {
    backend,
    close: async () => {
      await backend.close();
      dir.cleanup();
    },
  };
});

runBlobCleanupConformance("postgres", async () => {
  const db = await createDatabase();
  const backend = await openPostgresBackend(db.url);
  return {
    backend,
    close: async () => {
      await backend.close();
      await db.drop();
    },
  };
});

describe("blobRemoval", () => {
  const refs: BlobReferences = { pinned: new Set(["p"]), kept: new Set(["k"]) };
  const policy = { nowMs: 10_000, graceMs: 1_000, retentionMs: 5_000 };
  const blob = (id: string, storedAtMs: number) => ({ id, sizeBytes: 1, storedAtMs });

  test("pending work keeps a blob whatever its age or release", () => {
    expect(
      blobRemoval(blob("p", 0), refs, { ...policy, released: { ids: new Set(["p"]), atMs: 9_000 } }),
    ).toBeNull();
  });

  test("history goes only past retention; without retention it stays", () => {
    expect(blobRemoval(blob("k", 4_999), refs, policy)).toBe("retention");
    expect(blobRemoval(blob("k", 5_000), refs, policy)).toBeNull();
    expect(blobRemoval(blob("k", 0), refs, { ...policy, retentionMs: null })).toBeNull();
  });

  test("an unreferenced blob waits out the grace, unless it was released before it was put again", () => {
    expect(blobRemoval(blob("x", 8_999), refs, policy)).toBe("unreferenced");
    expect(blobRemoval(blob("x", 9_500), refs, policy)).toBeNull();
    const released = { ids: new Set(["x"]), atMs: 9_600 };
    expect(blobRemoval(blob("x", 9_500), refs, { ...policy, released })).toBe("unreferenced");
    expect(blobRemoval(blob("x", 9_700), refs, { ...policy, released })).toBeNull();
  });
});
