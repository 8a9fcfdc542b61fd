import { Database } from "bun:sqlite";

/** Per table of the SQLite file with a conversation_id column: the rows naming `conversationId`. */
export function conversationRows(dbPath: string, conversationId: string): Record<string, number> {
  const db = new Database(dbPath, { readonly: true });
  try {
    const tables = db
      .query(
        "SELECT m.name AS name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'conversation_id')",
      )
      .all() as Array<{ name: string }>;
    return Object.fromEntries(
      tables.map(({ name }) => [
        name,
        (
          db.query(`SELECT count(*) AS n FROM ${name} WHERE conversation_id = ?`).get(conversationId) as {
            n: number;
          }
        ).n,
      ]),
    );
  } finally {
    db.close();
  }
}
