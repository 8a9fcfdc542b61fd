import type { Database } from "bun:sqlite";
import { toFts5Match } from "../../search/query.ts";
import type { HistoryWindow, SearchHit, SearchStore } from "../../search/store.ts";
import {
  type HistoryRow,
  type HitRow,
  scopeAdmits,
  scopeCondition,
  toHistoryMessage,
  toHit,
} from "../search-rows.ts";

/** Messages indexed per backfill transaction. */
export const BACKFILL_PAGE = 5_000;

const TEXT_OF = (alias: string) => `(SELECT substr(group_concat(CASE json_extract(p.value, '$.type')
      WHEN 'text' THEN json_extract(p.value, '$.text')
      WHEN 'tool-result' THEN json_extract(p.value, '$.toolName') || ': ' || substr(CAST(json_extract(p.value, '$.output') AS TEXT), 1, 300)
      END, ' '), 1, 20000) FROM json_each(${alias}.parts) AS p)`;

/**
 * Indexes the messages that existed before the history-search migration, newest first, one page per
 * transaction, so a large database is not locked for one long write and a crash resumes where it
 * stopped. Returns how many messages it indexed.
 */
export function backfillSearchIndex(db: Database, pageSize = BACKFILL_PAGE): number {
  const cursor = db.query("SELECT value FROM switchboard_meta WHERE key = 'search_backfill_until'");
  let indexed = 0;
  for (;;) {
    const row = cursor.get() as { value: string } | null;
    const until = row ? Number(row.value) : 0;
    if (until <= 0) return indexed;
    const from = Math.max(0, until - pageSize);
    db.transaction(() => {
      db.query("DELETE FROM message_search WHERE rowid > ? AND rowid <= ?").run(from, until);
      const done = db
        .query(
          `INSERT INTO message_search (rowid, body) SELECT m.ord, ${TEXT_OF("m")} FROM messages AS m WHERE m.ord > ? AND m.ord <= ?`,
        )
        .run(from, until);
      indexed += done.changes;
      db.query("UPDATE switchboard_meta SET value = ? WHERE key = 'search_backfill_until'").run(String(from));
    }).immediate();
  }
}

export function createSqliteSearch(db: Database): SearchStore {
  return {
    async searchHistory({ query, scope, limit }): Promise<SearchHit[]> {
      const condition = scopeCondition(scope);
      const rows = db
        .query(
          `SELECT m.id AS ref, m.conversation_id, m.run_id, m.role, m.created_at_ms,
             snippet(message_search, 0, '[', ']', '…', 16) AS snippet
           FROM message_search JOIN messages AS m ON m.ord = message_search.rowid
           WHERE message_search MATCH ? AND ${condition.sql}
           ORDER BY bm25(message_search), m.ord DESC LIMIT ?`,
        )
        .all(
          ...[toFts5Match(query), ...(condition.param === null ? [] : [condition.param]), limit],
        ) as HitRow[];
      return rows.map(toHit);
    },
    async readHistory({ ref, scope, before, after }): Promise<HistoryWindow | null> {
      return db
        .transaction(() => {
          const target = db.query("SELECT ord, conversation_id FROM messages WHERE id = ?").get(ref) as {
            ord: number;
            conversation_id: string;
          } | null;
          if (!target) return null;
          const principals = (
            db
              .query("SELECT principal FROM conversation_principals WHERE conversation_id = ?")
              .all(target.conversation_id) as Array<{ principal: string }>
          ).map((r) => r.principal);
          if (!scopeAdmits(scope, target.conversation_id, principals)) return null;
          const columns = "id, run_id, role, parts, created_at_ms";
          const older = db
            .query(
              `SELECT ${columns} FROM messages WHERE conversation_id = ? AND ord < ? ORDER BY ord DESC LIMIT ?`,
            )
            .all(target.conversation_id, target.ord, before) as HistoryRow[];
          const rest = db
            .query(
              `SELECT ${columns} FROM messages WHERE conversation_id = ? AND ord >= ? ORDER BY ord LIMIT ?`,
            )
            .all(target.conversation_id, target.ord, after + 1) as HistoryRow[];
          return {
            conversationId: target.conversation_id,
            messages: [...older.reverse(), ...rest].map(toHistoryMessage),
          };
        })
        .deferred();
    },
  };
}
