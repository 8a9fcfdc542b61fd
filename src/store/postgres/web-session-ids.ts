/**
 * The "web-session-ids" data migration on PostgreSQL (see ../web-session-ids.ts): one transaction,
 * under the migrations' advisory lock, that finds the session ids, rewrites every text column of
 * every table of the schema, and records that it ran. The server picks the rows that hold an id
 * (a case-insensitive regular expression of the ids, a bounded number at a time), so only those
 * cross the connection. The old row versions stay in the table files until VACUUM reclaims them.
 */
import type { SQL } from "bun";
import {
  DISCOVERY,
  rewriterOf,
  rewrittenColumns,
  UNTOUCHED_TABLES,
  WEB_SESSION_IDS_MIGRATION,
  type WebSessionMigration,
} from "../web-session-ids.ts";

/** Session ids per regular expression: PostgreSQL refuses ones that compile too large. */
const IDS_PER_PATTERN = 100;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Runs the migration unless it ran before; null when it had. `userIdOf` may throw: then nothing
 * is changed and nothing recorded.
 */
export async function migratePostgresWebSessionIds(
  sql: SQL,
  userIdOf: (sessionId: string) => string,
  nowMs: number,
): Promise<WebSessionMigration | null> {
  return await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:migrate'))`;
    const [done] = await tx<Array<{ key: string }>>`
      SELECT key FROM switchboard_meta WHERE key = ${WEB_SESSION_IDS_MIGRATION}`;
    if (done) return null;
    const found: Array<Array<{ v: unknown }>> = [];
    for (const source of DISCOVERY) found.push((await tx.unsafe(source.sql)) as Array<{ v: unknown }>);
    const rewriter = rewriterOf(found, userIdOf);
    const changed = { rows: 0, tables: [] as string[] };
    if (rewriter.size > 0) {
      const columns = (await tx`
        SELECT c.table_name AS "table", c.column_name AS "column", c.data_type AS type
        FROM information_schema.columns AS c
        JOIN information_schema.tables AS t
          ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
        WHERE c.table_schema = current_schema()
          AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
        ORDER BY c.table_name, c.ordinal_position`) as Array<{ table: string; column: string; type: string }>;
      const tables = new Map<string, Array<{ column: string; type: string }>>();
      for (const { table, column, type } of columns) {
        if (UNTOUCHED_TABLES.has(table)) continue;
        tables.set(table, [...(tables.get(table) ?? []), { column, type }]);
      }
      const ids = rewriter.sessionIds();
      for (const [table, texts] of tables) {
        let rows = 0;
        const names = texts.map((t) => t.column);
        for (let i = 0; i < ids.length; i += IDS_PER_PATTERN) {
          // Ids are of A-Z a-z 0-9 _ -: nothing to escape. `~*` also finds lower-cased copies.
          const pattern = ids.slice(i, i + IDS_PER_PATTERN).join("|");
          const found = (await tx.unsafe(
            `SELECT ctid::text AS row_id, ${texts.map((t, n) => `${quote(t.column)}::text AS c${n}`).join(", ")}
             FROM ${quote(table)}
             WHERE ${texts.map((t) => `${quote(t.column)}::text ~* $1`).join(" OR ")}`,
            [pattern],
          )) as Array<Record<string, string | null>>;
          for (const row of found) {
            const values = rewrittenColumns(row, table, names, rewriter);
            if (values.length === 0) continue;
            const set = values
              .map(([n], k) => `${quote(texts[n]!.column)} = $${k + 1}::${cast(texts[n]!.type)}`)
              .join(", ");
            await tx.unsafe(`UPDATE ${quote(table)} SET ${set} WHERE ctid = $${values.length + 1}::tid`, [
              ...values.map(([, v]) => v),
              row.row_id,
            ]);
            rows += 1;
          }
        }
        if (rows > 0) {
          changed.rows += rows;
          changed.tables.push(table);
        }
      }
    }
    const result: WebSessionMigration = { sessions: rewriter.size, ...changed };
    await tx`
      INSERT INTO switchboard_meta (key, value)
      VALUES (${WEB_SESSION_IDS_MIGRATION}, ${JSON.stringify({ atMs: nowMs, ...result })})`;
    return result;
  });
}

function cast(type: string): string {
  return type === "character varying" ? "varchar" : type === "character" ? "text" : type;
}
