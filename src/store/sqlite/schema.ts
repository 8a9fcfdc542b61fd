import {
  approvalsTablesSql,
  ingressReceiptsTableSql,
  messagesTableSql,
  RUNS_INDEXES_SQL,
  runsTableSql,
  SQLITE_DIALECT,
  stepsTableSql,
  toolOutputsSql,
} from "../tables.sql.ts";

/** Migration 1: conversations, runs, messages, admissions, ingress receipts, the event ledger. */
export const RUNTIME_SCHEMA_SQL = `
CREATE TABLE conversations (
  id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE TABLE conversation_tombstones (
  conversation_id TEXT PRIMARY KEY,
  purged_at_ms INTEGER NOT NULL
);
CREATE TABLE conversation_keys (
  key TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  generation INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
${runsTableSql(SQLITE_DIALECT)}
${RUNS_INDEXES_SQL}
${messagesTableSql(SQLITE_DIALECT)}
${stepsTableSql(SQLITE_DIALECT)}
CREATE TABLE admissions (
  conversation_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  run_id TEXT NOT NULL,
  input_message_id TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, idempotency_key)
) WITHOUT ROWID;
${ingressReceiptsTableSql(SQLITE_DIALECT)}
CREATE TABLE events (
  conversation_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
`;

/** Migration 4: per-conversation settings (the /tz time zone). */
export const SETTINGS_SCHEMA_SQL = `
CREATE TABLE conversation_settings (
  conversation_id TEXT PRIMARY KEY,
  settings TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** Migration 5: summaries left by summarising compaction. */
export const SUMMARIES_SCHEMA_SQL = `
CREATE TABLE conversation_summaries (
  conversation_id TEXT PRIMARY KEY,
  text TEXT NOT NULL,
  through_finish_seq INTEGER NOT NULL,
  version INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
`;

/**
 * Migration 6: an admission receipt becomes two columns of the input message it admitted (the
 * run and message it names were always that message's own), so admitting writes one row less.
 * The key leads its index: platforms hand out update ids in increasing order (Telegram update
 * ids, Discord snowflakes, web message counters), so a new entry lands at the end of the index
 * instead of on one page per conversation.
 */
export const ADMISSION_COLUMNS_SQL = `
ALTER TABLE messages ADD COLUMN idempotency_key TEXT;
ALTER TABLE messages ADD COLUMN fingerprint TEXT;
UPDATE messages SET idempotency_key = a.idempotency_key, fingerprint = a.fingerprint
  FROM admissions AS a WHERE a.input_message_id = messages.id;
CREATE UNIQUE INDEX messages_admission ON messages (idempotency_key, conversation_id)
  WHERE idempotency_key IS NOT NULL;
DROP TABLE admissions;
`;

/**
 * Migration 8: the event ledger becomes a rowid table (rows appended in commit order) with a
 * narrow per-conversation index. Clustered by conversation, every admission of a burst rewrote
 * its conversation's page of full event rows, and split it every dozen events: about two of the
 * three pages an admission dirtied. The index entry it now writes instead is a few dozen bytes.
 */
export const EVENTS_BY_ROWID_SQL = `
CREATE TABLE events_by_rowid (
  id INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  at_ms INTEGER NOT NULL
);
INSERT INTO events_by_rowid (conversation_id, seq, type, payload, at_ms)
  SELECT conversation_id, seq, type, payload, at_ms FROM events ORDER BY at_ms, conversation_id, seq;
DROP TABLE events;
ALTER TABLE events_by_rowid RENAME TO events;
CREATE UNIQUE INDEX events_conversation ON events (conversation_id, seq);
`;

/** Migration 10: tool results too large for the prompt, kept in full for read_output. */
export const TOOL_OUTPUTS_SQL = toolOutputsSql(SQLITE_DIALECT);

/** Migration 11: per-conversation state slots (goal, todo), each change also a ledger event. */
export const STATE_SLOTS_SQL = `
CREATE TABLE conversation_state (
  conversation_id TEXT NOT NULL,
  slot TEXT NOT NULL,
  value TEXT NOT NULL,
  version INTEGER NOT NULL,
  actor TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, slot)
) WITHOUT ROWID;
`;

/**
 * Migration 12: history search. An FTS5 index over each message's text and tool results in
 * summary (rowid = messages.ord), kept by triggers, so it changes in the very transaction that
 * writes the message (since migration 20, a user's input in the one that ends its run). Which principals (`<channel>:<user id>`) had a turn in which conversation,
 * kept the same way from runs, authorises a search. Existing messages are indexed after the
 * migration, in pages (search-index.ts), from `search_backfill_until` down.
 */
export const HISTORY_SEARCH_SQL = `
CREATE VIRTUAL TABLE message_search USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
  INSERT INTO message_search (rowid, body)
    SELECT new.ord, substr(group_concat(CASE json_extract(p.value, '$.type')
      WHEN 'text' THEN json_extract(p.value, '$.text')
      WHEN 'tool-result' THEN json_extract(p.value, '$.toolName') || ': ' || substr(CAST(json_extract(p.value, '$.output') AS TEXT), 1, 300)
      END, ' '), 1, 20000)
    FROM json_each(new.parts) AS p;
END;
CREATE TRIGGER messages_search_update AFTER UPDATE OF parts ON messages BEGIN
  DELETE FROM message_search WHERE rowid = old.ord;
  INSERT INTO message_search (rowid, body)
    SELECT new.ord, substr(group_concat(CASE json_extract(p.value, '$.type')
      WHEN 'text' THEN json_extract(p.value, '$.text')
      WHEN 'tool-result' THEN json_extract(p.value, '$.toolName') || ': ' || substr(CAST(json_extract(p.value, '$.output') AS TEXT), 1, 300)
      END, ' '), 1, 20000)
    FROM json_each(new.parts) AS p;
END;
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
  DELETE FROM message_search WHERE rowid = old.ord;
END;
CREATE TABLE conversation_principals (
  principal TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  PRIMARY KEY (principal, conversation_id)
) WITHOUT ROWID;
CREATE INDEX conversation_principals_conversation ON conversation_principals (conversation_id);
CREATE TRIGGER runs_principal AFTER INSERT ON runs
  WHEN json_extract(new.context, '$.principal.id') IS NOT NULL BEGIN
  INSERT OR IGNORE INTO conversation_principals (principal, conversation_id) VALUES (
    json_extract(new.context, '$.channel') || ':' || json_extract(new.context, '$.principal.id'),
    new.conversation_id);
END;
CREATE TRIGGER tombstone_principals AFTER INSERT ON conversation_tombstones BEGIN
  DELETE FROM conversation_principals WHERE conversation_id = new.conversation_id;
END;
INSERT OR IGNORE INTO conversation_principals (principal, conversation_id)
  SELECT json_extract(context, '$.channel') || ':' || json_extract(context, '$.principal.id'), conversation_id
  FROM runs WHERE json_extract(context, '$.principal.id') IS NOT NULL;
INSERT INTO switchboard_meta (key, value)
  VALUES ('search_backfill_until', (SELECT COALESCE(MAX(ord), 0) FROM messages));
`;

/**
 * Migration 13: approval requests (written with the asking run's terminal commit, decided with
 * the successor's admission) and secrets generated once (the approval signing key). The same migration adds the outbox
 * `presentation` column (OUTBOX_PRESENTATION_SQL).
 */
export const APPROVALS_SCHEMA_SQL = `
${approvalsTablesSql(SQLITE_DIALECT)}
`;

/**
 * Migration 14: a tombstone records who purged the conversation (the audit entry of /forget and
 * `conversations purge`: who, when, which conversation, no content).
 */
export const PURGED_BY_SQL = `
ALTER TABLE conversation_tombstones ADD COLUMN purged_by TEXT;
`;

/**
 * Migration 19: what the operator's conversation search (`conversations list --query`) matches,
 * lower-cased, one row per conversation and term: the id and name of every user who had a run in
 * it and every channel key mapped to it. Kept by triggers in the transaction that writes the run
 * or the key, dropped with the conversation's tombstone. A search scans this narrow table (every
 * conversation, whatever its age) instead of the runs' JSON.
 */
export const CONVERSATION_LOOKUP_SQL = `
CREATE TABLE conversation_lookup (
  conversation_id TEXT NOT NULL,
  term TEXT NOT NULL,
  PRIMARY KEY (conversation_id, term)
) WITHOUT ROWID;
CREATE TRIGGER runs_lookup AFTER INSERT ON runs WHEN json_valid(new.context) BEGIN
  INSERT OR IGNORE INTO conversation_lookup (conversation_id, term)
    SELECT new.conversation_id, lower(value) FROM (
      SELECT json_extract(new.context, '$.principal.id') AS value
      UNION ALL SELECT json_extract(new.context, '$.principal.name')
    ) WHERE value IS NOT NULL AND value <> '';
END;
CREATE TRIGGER conversation_keys_lookup_insert AFTER INSERT ON conversation_keys BEGIN
  INSERT OR IGNORE INTO conversation_lookup (conversation_id, term) VALUES (new.conversation_id, lower(new.key));
END;
CREATE TRIGGER conversation_keys_lookup_update AFTER UPDATE OF conversation_id ON conversation_keys BEGIN
  INSERT OR IGNORE INTO conversation_lookup (conversation_id, term) VALUES (new.conversation_id, lower(new.key));
END;
CREATE TRIGGER tombstone_lookup AFTER INSERT ON conversation_tombstones BEGIN
  DELETE FROM conversation_lookup WHERE conversation_id = new.conversation_id;
END;
INSERT OR IGNORE INTO conversation_lookup (conversation_id, term)
  SELECT conversation_id, lower(value) FROM (
    SELECT conversation_id, json_extract(context, '$.principal.id') AS value FROM runs WHERE json_valid(context)
    UNION ALL
    SELECT conversation_id, json_extract(context, '$.principal.name') FROM runs WHERE json_valid(context)
  ) WHERE value IS NOT NULL AND value <> '';
INSERT OR IGNORE INTO conversation_lookup (conversation_id, term)
  SELECT conversation_id, lower(key) FROM conversation_keys;
`;

/**
 * Migration 23: what a channel keeps across restarts besides messages (Matrix's sync token,
 * advanced only after the events it covers were admitted, and its login), one row per name.
 */
export const CHANNEL_STATE_SQL = `
CREATE TABLE channel_state (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
`;
