import { Database } from "bun:sqlite";
import { join } from "node:path";
import { SQL } from "bun";
import { createDatabase } from "../support/postgres.ts";

export type ChaosEngine = "sqlite" | "postgres";

/** The gateway's database as the chaos driver sees it: how to point a gateway at it, and reads. */
export interface ChaosDatabase {
  readonly engine: ChaosEngine;
  /** Where it is, for the log and the report (a file, or a fresh database's URL). */
  readonly location: string;
  /** The gateway's environment variable naming it. */
  readonly env: Record<string, string>;
  /** Runs a read-only query; integers may come back as numbers or strings. */
  read<T>(sql: string): Promise<T[]>;
  /** The tables that have a `conversation_id` column (what a purge must empty). */
  conversationTables(): Promise<string[]>;
  /** Drops a PostgreSQL database unless it is kept for a failed run's evidence. */
  close(options: { keep: boolean }): Promise<void>;
}

/** A fresh database for one chaos run: a SQLite file in `dir`, or a new database on the test server. */
export async function openChaosDatabase(engine: ChaosEngine, dir: string): Promise<ChaosDatabase> {
  if (engine === "sqlite") {
    const path = join(dir, "gateway.sqlite");
    const read = async <T>(sql: string): Promise<T[]> => {
      // A fresh read-only connection per query holds no snapshot between polls (WAL).
      const db = new Database(path, { readonly: true });
      try {
        return db.query(sql).all() as T[];
      } finally {
        db.close();
      }
    };
    return {
      engine,
      location: path,
      env: { SWITCHBOARD_DB: path },
      read,
      async conversationTables() {
        const rows = await read<{ name: string }>(
          "SELECT m.name AS name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'conversation_id')",
        );
        return rows.map((r) => r.name);
      },
      close: async () => {},
    };
  }
  const created = await createDatabase();
  const sql = new SQL(created.url, { max: 2 });
  return {
    engine,
    location: created.url,
    env: { SWITCHBOARD_DATABASE_URL: created.url },
    read: async <T>(text: string) => (await sql.unsafe(text)) as T[],
    async conversationTables() {
      const rows = (await sql.unsafe(
        "SELECT table_name AS name FROM information_schema.columns WHERE column_name = 'conversation_id' AND table_schema = current_schema()",
      )) as Array<{ name: string }>;
      return rows.map((r) => r.name);
    },
    async close({ keep }) {
      await sql.close();
      if (!keep) await created.drop();
    },
  };
}
