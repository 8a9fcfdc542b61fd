import type { Database } from "bun:sqlite";
import { toFts5Match } from "../../search/query.ts";
import type { HistoryWindow, SearchHit, SearchStore } from "../../search/store.ts";
import { sqlitePrincipalSql } from "../principal.sql.ts";
import { type HistoryRow, type HitRow, scopeCondition, toHistoryMessage, toHit } from "../search-rows.ts";
import { indexedWhenWritten, inputOf, runEnds } from "../search-timing.ts";

/**
 * Migration 16: which room (`<channel>:<room key>`, the conversation key where the adapter names
 * no room) each conversation is in, kept from runs as conversation_principals is, for a surface's
 * `historyScope: "channel"`. Runs admitted before it are mapped from their context here.
 */
export const SEARCH_ROOMS_SQL = `
CREATE TABLE conversation_rooms (
  room TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  PRIMARY KEY (room, conversation_id)
) WITHOUT ROWID;
CREATE INDEX conversation_rooms_conversation ON conversation_rooms (conversation_id);
CREATE TRIGGER runs_room AFTER INSERT ON runs
  WHEN json_extract(new.context, '$.conversationKey') IS NOT NULL BEGIN
  INSERT OR IGNORE INTO conversation_rooms (room, conversation_id) VALUES (
    json_extract(new.context, '$.channel') || ':' ||
      COALESCE(json_extract(new.context, '$.roomKey'), json_extract(new.context, '$.conversationKey')),
    new.conversation_id);
END;
CREATE TRIGGER tombstone_rooms AFTER INSERT ON conversation_tombstones BEGIN
  DELETE FROM conversation_rooms WHERE conversation_id = new.conversation_id;
END;
INSERT OR IGNORE INTO conversation_rooms (room, conversation_id)
  SELECT json_extract(context, '$.channel') || ':' ||
      COALESCE(json_extract(context, '$.roomKey'), json_extract(context, '$.conversationKey')),
    conversation_id
  FROM runs WHERE json_valid(context) AND json_extract(context, '$.conversationKey') IS NOT NULL;
`;

/** Messages indexed per backfill transaction. */
export const BACKFILL_PAGE = 5_000;

const TEXT_OF = (alias: string) => `(SELECT substr(group_concat(CASE json_extract(p.value, '$.type')
      WHEN 'text' THEN json_extract(p.value, '$.text')
      WHEN 'tool-result' THEN json_extract(p.value, '$.toolName') || ': ' || substr(CAST(json_extract(p.value, '$.output') AS TEXT), 1, 300)
      END, ' '), 1, 20000) FROM json_each(${alias}.parts) AS p)`;

/**
 * Migration 20: a user's input is indexed when its run ends instead of by its admission (see
 * search-timing.ts for which message is indexed when). Admission, the acknowledgement path, no
 * longer writes an FTS5 row. An edit reindexes only a message the index has, so an input
 * already indexed by the earlier trigger stays right; the run's end adds only the inputs the
 * index lacks (FTS5 refuses a second row with one rowid). Nothing is indexed here.
 */
export const INPUTS_AT_RUN_END_SQL = `
DROP TRIGGER messages_search_insert;
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages WHEN ${indexedWhenWritten("new")} BEGIN
  INSERT INTO message_search (rowid, body) VALUES (new.ord, ${TEXT_OF("new")});
END;
DROP TRIGGER messages_search_update;
CREATE TRIGGER messages_search_update AFTER UPDATE OF parts ON messages
  WHEN EXISTS (SELECT 1 FROM message_search WHERE rowid = old.ord) BEGIN
  DELETE FROM message_search WHERE rowid = old.ord;
  INSERT INTO message_search (rowid, body) VALUES (new.ord, ${TEXT_OF("new")});
END;
CREATE TRIGGER runs_search_inputs AFTER UPDATE OF finish_seq ON runs WHEN ${runEnds("old", "new")} BEGIN
  INSERT INTO message_search (rowid, body)
    SELECT m.ord, ${TEXT_OF("m")} FROM messages AS m
    WHERE ${inputOf("m", "new")} AND NOT EXISTS (SELECT 1 FROM message_search WHERE rowid = m.ord);
END;
`;

/**
 * Migration 27: a named account's users are principals of their own in history search as in
 * budgets (`<channel>:<account>:<user id>`), so a surface's `historyScope: "user"` on one bot never
 * reaches the user's conversations with another. The named accounts' conversations are mapped
 * again; the `default` account's keep `<channel>:<user id>`; purged conversations stay unmapped.
 */
export const HISTORY_ACCOUNT_PRINCIPALS_SQL = `
DROP TRIGGER runs_principal;
CREATE TRIGGER runs_principal AFTER INSERT ON runs
  WHEN json_extract(new.context, '$.principal.id') IS NOT NULL BEGIN
  INSERT OR IGNORE INTO conversation_principals (principal, conversation_id)
    VALUES (${sqlitePrincipalSql("new.context")}, new.conversation_id);
END;
DELETE FROM conversation_principals WHERE conversation_id IN (
  SELECT conversation_id FROM runs WHERE json_valid(context) AND json_extract(context, '$.accountName') IS NOT NULL);
INSERT OR IGNORE INTO conversation_principals (principal, conversation_id)
  SELECT ${sqlitePrincipalSql("context")}, conversation_id FROM runs
  WHERE json_valid(context) AND json_extract(context, '$.principal.id') IS NOT NULL
    AND json_extract(context, '$.accountName') IS NOT NULL
    AND conversation_id NOT IN (SELECT conversation_id FROM conversation_tombstones);
`;

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
          // A message outside the scope is not found, exactly like one that does not exist.
          const condition = scopeCondition(scope);
          const target = db
            .query(`SELECT m.ord, m.conversation_id FROM messages AS m WHERE m.id = ? AND ${condition.sql}`)
            .get(...[ref, ...(condition.param === null ? [] : [condition.param])]) as {
            ord: number;
            conversation_id: string;
          } | null;
          if (!target) return null;
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
