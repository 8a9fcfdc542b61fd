import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../../src/store/sqlite/database.ts";
import { MIGRATIONS } from "../../../src/store/sqlite/index.ts";
import { SqliteOutboxRepository } from "../../../src/store/sqlite/outbox.ts";

/**
 * A temp-file database with switchboard's whole schema (the outbox reads the runs it delivers
 * for), opened the way the gateway opens its own.
 */
export class OutboxDb {
  readonly path: string;
  private readonly dir: string;
  private readonly open: Database[] = [];

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), "outbox-test-"));
    this.path = join(this.dir, "switchboard.db");
    openDatabase({ filename: this.path, migrations: MIGRATIONS }).close();
  }

  /** A new connection to the same file (a restarted process). */
  connect(): Database {
    const db = new Database(this.path, { create: true, strict: true });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA busy_timeout = 2000");
    this.open.push(db);
    return db;
  }

  repository(): SqliteOutboxRepository {
    return new SqliteOutboxRepository(this.connect());
  }

  close(): void {
    for (const db of this.open) db.close(false);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
