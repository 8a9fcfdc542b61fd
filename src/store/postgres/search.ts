import type { SQL } from "bun";
import { toTsquery } from "../../search/query.ts";
import type { HistoryWindow, SearchHit, SearchStore } from "../../search/store.ts";
import { postgresPrincipalSql } from "../principal.sql.ts";
import type { Integer } from "../rows.ts";
import { type HistoryRow, type HitRow, scopeCondition, toHistoryMessage, toHit } from "../search-rows.ts";
import { indexedWhenWritten, inputOf, runEnds } from "../search-timing.ts";

/**
 * Migration 14 (SQLite's 16): which room (`<channel>:<room key>`, the conversation key where the
 * adapter names no room) each conversation is in, kept from runs as conversation_principals is,
 * for a surface's `historyScope: "channel"`. Runs admitted before it are mapped here.
 */
export const SEARCH_ROOMS_SQL = `
CREATE TABLE conversation_rooms (
  room TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  PRIMARY KEY (room, conversation_id)
);
CREATE INDEX conversation_rooms_conversation ON conversation_rooms (conversation_id);
CREATE FUNCTION switchboard_run_room() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF (NEW.context::jsonb ->> 'conversationKey') IS NOT NULL THEN
    INSERT INTO conversation_rooms (room, conversation_id)
      VALUES ((NEW.context::jsonb ->> 'channel') || ':' ||
          COALESCE(NEW.context::jsonb ->> 'roomKey', NEW.context::jsonb ->> 'conversationKey'),
        NEW.conversation_id)
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_room AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION switchboard_run_room();
CREATE FUNCTION switchboard_tombstone_rooms() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM conversation_rooms WHERE conversation_id = NEW.conversation_id;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER tombstone_rooms AFTER INSERT ON conversation_tombstones
  FOR EACH ROW EXECUTE FUNCTION switchboard_tombstone_rooms();
INSERT INTO conversation_rooms (room, conversation_id)
  SELECT DISTINCT (context::jsonb ->> 'channel') || ':' ||
      COALESCE(context::jsonb ->> 'roomKey', context::jsonb ->> 'conversationKey'), conversation_id
  FROM runs WHERE jsonb_typeof(context::jsonb) = 'object' AND (context::jsonb ->> 'conversationKey') IS NOT NULL
  ON CONFLICT DO NOTHING;
`;

/**
 * Migration 18 (SQLite's 20): a user's input is indexed when its run ends instead of by its
 * admission (see search-timing.ts for which message is indexed when). Admission, the
 * acknowledgement path, no longer writes a tsvector or a GIN entry. An edit reindexes only a
 * message the index has, so an input already indexed by the earlier function stays right; the
 * run's end adds only the inputs the index lacks. Nothing is indexed here.
 */
export const INPUTS_AT_RUN_END_SQL = `
CREATE OR REPLACE FUNCTION switchboard_index_message() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM message_search WHERE ord = OLD.ord;
    RETURN OLD;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    UPDATE message_search SET body = t.body, search = to_tsvector('simple', t.body)
      FROM (SELECT switchboard_search_text(NEW.parts) AS body) AS t
      WHERE message_search.ord = NEW.ord;
  ELSIF ${indexedWhenWritten("NEW")} THEN
    INSERT INTO message_search (ord, conversation_id, body, search)
      SELECT NEW.ord, NEW.conversation_id, t.body, to_tsvector('simple', t.body)
      FROM (SELECT switchboard_search_text(NEW.parts) AS body) AS t
    ON CONFLICT (ord) DO UPDATE SET body = excluded.body, search = excluded.search;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE FUNCTION switchboard_index_run_inputs() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO message_search (ord, conversation_id, body, search)
    SELECT m.ord, m.conversation_id, t.body, to_tsvector('simple', t.body)
    FROM messages AS m, LATERAL (SELECT switchboard_search_text(m.parts) AS body) AS t
    WHERE ${inputOf("m", "NEW")}
  ON CONFLICT (ord) DO NOTHING;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_search_inputs AFTER UPDATE OF finish_seq ON runs
  FOR EACH ROW WHEN (${runEnds("OLD", "NEW")}) EXECUTE FUNCTION switchboard_index_run_inputs();
`;

/**
 * Migration 24 (SQLite's 27): a named account's users are principals of their own in history
 * search as in budgets (`<channel>:<account>:<user id>`), so `historyScope: "user"` on one bot
 * never reaches the user's conversations with another. The named accounts' conversations are
 * mapped again; the `default` account's keep `<channel>:<user id>`; purged ones stay unmapped.
 */
export const HISTORY_ACCOUNT_PRINCIPALS_SQL = `
CREATE OR REPLACE FUNCTION switchboard_run_principal() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE context JSONB := NEW.context::jsonb;
BEGIN
  IF (context -> 'principal' ->> 'id') IS NOT NULL THEN
    INSERT INTO conversation_principals (principal, conversation_id)
      VALUES (${postgresPrincipalSql("context")}, NEW.conversation_id)
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END
$fn$;
DELETE FROM conversation_principals WHERE conversation_id IN (
  SELECT conversation_id FROM runs
  WHERE jsonb_typeof(context::jsonb) = 'object' AND (context::jsonb ->> 'accountName') IS NOT NULL);
INSERT INTO conversation_principals (principal, conversation_id)
  SELECT DISTINCT ${postgresPrincipalSql("context::jsonb")}, conversation_id FROM runs
  WHERE jsonb_typeof(context::jsonb) = 'object' AND (context::jsonb -> 'principal' ->> 'id') IS NOT NULL
    AND (context::jsonb ->> 'accountName') IS NOT NULL
    AND conversation_id NOT IN (SELECT conversation_id FROM conversation_tombstones)
  ON CONFLICT DO NOTHING;
`;

/** Messages indexed per backfill transaction. */
export const BACKFILL_PAGE = 5_000;

/**
 * Indexes the messages that existed before migration 7, newest first, one page per transaction
 * (a crash resumes where it stopped). Gateways starting together take turns on an advisory lock.
 */
export async function backfillSearchIndex(sql: SQL, pageSize = BACKFILL_PAGE): Promise<number> {
  let indexed = 0;
  for (;;) {
    const more = await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:search-backfill'))`;
      const [row] = await tx<Array<{ value: string }>>`
        SELECT value FROM switchboard_meta WHERE key = 'search_backfill_until'`;
      const until = row ? Number(row.value) : 0;
      if (until <= 0) return false;
      const from = Math.max(0, until - pageSize);
      const done = await tx`
        INSERT INTO message_search (ord, conversation_id, body, search)
          SELECT m.ord, m.conversation_id, t.body, to_tsvector('simple', t.body)
          FROM messages AS m, LATERAL (SELECT switchboard_search_text(m.parts) AS body) AS t
          WHERE m.ord > ${from} AND m.ord <= ${until}
        ON CONFLICT (ord) DO UPDATE SET body = excluded.body, search = excluded.search`;
      indexed += done.count;
      await tx`UPDATE switchboard_meta SET value = ${String(from)} WHERE key = 'search_backfill_until'`;
      return true;
    });
    if (!more) return indexed;
  }
}

/** `?` placeholders of the shared scope condition as `$n`, after `offset` earlier parameters. */
function numbered(condition: string, offset: number): string {
  let n = offset;
  return condition.replace(/\?/g, () => `$${++n}`);
}

export function createPostgresSearch(sql: SQL): SearchStore {
  return {
    async searchHistory({ query, scope, limit }): Promise<SearchHit[]> {
      const condition = scopeCondition(scope);
      const params: unknown[] = [toTsquery(query)];
      if (condition.param !== null) params.push(condition.param);
      params.push(limit);
      // Ranked and limited first; ts_headline, the costly part, runs on the survivors only.
      const rows = await sql.unsafe<HitRow[]>(
        `WITH q AS (SELECT to_tsquery('simple', $1) AS query),
         best AS (
           SELECT s.ord, s.body, ts_rank_cd(s.search, q.query) AS rank
           FROM message_search AS s JOIN messages AS m ON m.ord = s.ord, q
           WHERE s.search @@ q.query AND ${numbered(condition.sql, 1)}
           ORDER BY rank DESC, s.ord DESC LIMIT $${params.length})
         SELECT m.id AS ref, m.conversation_id, m.run_id, m.role, m.created_at_ms,
           ts_headline('simple', best.body, q.query,
             'StartSel=[, StopSel=], MaxWords=24, MinWords=8, MaxFragments=1, FragmentDelimiter=…') AS snippet
         FROM best JOIN messages AS m ON m.ord = best.ord, q
         ORDER BY best.rank DESC, best.ord DESC`,
        params,
      );
      return rows.map(toHit);
    },
    async readHistory({ ref, scope, before, after }): Promise<HistoryWindow | null> {
      return (await sql.begin("isolation level repeatable read, read only", async (tx) => {
        // A message outside the scope is not found, exactly like one that does not exist.
        const condition = scopeCondition(scope);
        const [target] = await tx.unsafe<Array<{ ord: Integer; conversation_id: string }>>(
          `SELECT m.ord, m.conversation_id FROM messages AS m WHERE m.id = $1 AND ${numbered(condition.sql, 1)}`,
          condition.param === null ? [ref] : [ref, condition.param],
        );
        if (!target) return null;
        const older = await tx<HistoryRow[]>`
          SELECT id, run_id, role, parts, created_at_ms FROM messages
          WHERE conversation_id = ${target.conversation_id} AND ord < ${target.ord} ORDER BY ord DESC LIMIT ${before}`;
        const rest = await tx<HistoryRow[]>`
          SELECT id, run_id, role, parts, created_at_ms FROM messages
          WHERE conversation_id = ${target.conversation_id} AND ord >= ${target.ord} ORDER BY ord LIMIT ${after + 1}`;
        return {
          conversationId: target.conversation_id,
          messages: [...[...older].reverse(), ...rest].map(toHistoryMessage),
        };
      })) as HistoryWindow | null;
    },
  };
}
