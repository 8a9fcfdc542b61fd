import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { tempDir } from "../support/runtime.ts";
import { runStoreConformance } from "./conformance.ts";

runStoreConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    store: stores.runtime,
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

describe("sqlite schema versioning", () => {
  test("refuses a newer schema and a partial one with a clear error", () => {
    const dir = tempDir();
    try {
      const newer = join(dir.path, "newer.sqlite");
      openSqliteStores(newer).close();
      const raw = new Database(newer);
      raw.exec("UPDATE switchboard_meta SET value = '999' WHERE key = 'schema_version'");
      raw.close();
      expect(() => openSqliteStores(newer)).toThrow(/schema version 999, newer than this switchboard/);

      const partial = join(dir.path, "partial.sqlite");
      const p = new Database(partial);
      p.exec("CREATE TABLE runs (id TEXT)");
      p.close();
      expect(() => openSqliteStores(partial)).toThrow(/no switchboard schema version/);

      const reopened = openDatabase({ filename: join(dir.path, "ok.sqlite"), migrations: MIGRATIONS });
      reopened.close();
      const again = openDatabase({ filename: join(dir.path, "ok.sqlite"), migrations: MIGRATIONS });
      const version = again
        .query("SELECT value FROM switchboard_meta WHERE key = 'schema_version'")
        .get() as {
        value: string;
      };
      expect(Number(version.value)).toBe(MIGRATIONS.length);
      expect((again.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
      again.close();
    } finally {
      dir.cleanup();
    }
  });
});
