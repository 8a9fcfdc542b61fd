import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { PostgresBlobStore } from "../../src/store/postgres/blobs.ts";
import { openMigratedPool } from "../../src/store/postgres/schema.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runBlobConformance } from "./blob-conformance.ts";

useTestServer();

runBlobConformance("directory", async () => {
  const dir = tempDir("switchboard-blobs-");
  return { blobs: new DirectoryBlobStore(dir.path), close: async () => dir.cleanup() };
});

runBlobConformance("postgres", async () => {
  const db = await createDatabase();
  const sql = await openMigratedPool(db.url);
  return {
    blobs: new PostgresBlobStore(sql),
    close: async () => {
      await sql.close();
      await db.drop();
    },
  };
});

test("directory: a temp file a crashed put left is swept at the next open", async () => {
  const dir = tempDir("switchboard-blobs-");
  try {
    const blobs = new DirectoryBlobStore(dir.path);
    await Bun.write(join(dir.path, "tmp", "left-by-a-crash"), "partial");
    await blobs.sweepTemp();
    expect(readdirSync(join(dir.path, "tmp"))).toEqual([]);
  } finally {
    dir.cleanup();
  }
});

test("postgres: staging chunks a crashed put left are swept, finished blobs stay", async () => {
  const db = await createDatabase();
  const sql = await openMigratedPool(db.url);
  try {
    let now = 1_000_000;
    const blobs = new PostgresBlobStore(sql, () => now);
    await sql`INSERT INTO blob_chunks (blob_id, idx, data, created_at_ms)
      VALUES ('staging:dead', 0, ${Buffer.from("x")}, ${now})`;
    const kept = await blobs.put(
      (async function* () {
        yield new Uint8Array([9]);
      })(),
      { maxBytes: 10 },
    );
    now += 60_000;
    await blobs.sweepStaging(30_000);
    const rows = await sql<Array<{ blob_id: string }>>`SELECT blob_id FROM blob_chunks ORDER BY blob_id`;
    expect(rows.map((r) => r.blob_id)).toEqual([kept.id]);
  } finally {
    await sql.close();
    await db.drop();
  }
});
