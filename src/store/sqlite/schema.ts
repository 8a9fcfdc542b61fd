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
CREATE TABLE runs (
  queue_seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  conversation_id TEXT NOT NULL,
  state TEXT NOT NULL,
  priority TEXT NOT NULL,
  policy TEXT NOT NULL,
  input_message_ids TEXT NOT NULL,
  assistant_message_id TEXT NOT NULL,
  owner TEXT,
  fencing_token INTEGER NOT NULL DEFAULT 0,
  lease_expires_at_ms INTEGER,
  stop_reason TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  usage TEXT NOT NULL DEFAULT '{}',
  cost_complete INTEGER NOT NULL DEFAULT 1,
  absorbed_into TEXT,
  error TEXT,
  context TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  started_at_ms INTEGER,
  finished_at_ms INTEGER,
  finish_seq INTEGER
);
CREATE UNIQUE INDEX runs_finish_seq ON runs (finish_seq) WHERE finish_seq IS NOT NULL;
CREATE INDEX runs_active ON runs (queue_seq) WHERE state IN ('queued', 'running', 'interrupt_requested');
CREATE INDEX runs_conversation_active ON runs (conversation_id, queue_seq)
  WHERE state IN ('queued', 'running', 'interrupt_requested');
CREATE INDEX runs_conversation_finished ON runs (conversation_id, finish_seq) WHERE finish_seq IS NOT NULL;
CREATE TABLE messages (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  conversation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  role TEXT NOT NULL,
  parts TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, ord);
CREATE INDEX messages_run ON messages (run_id);
CREATE TABLE steps (
  run_id TEXT NOT NULL,
  step INTEGER NOT NULL,
  model TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  usage TEXT NOT NULL,
  started_at_ms INTEGER NOT NULL,
  finished_at_ms INTEGER NOT NULL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
CREATE TABLE admissions (
  conversation_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  run_id TEXT NOT NULL,
  input_message_id TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, idempotency_key)
) WITHOUT ROWID;
CREATE TABLE ingress_receipts (
  source TEXT NOT NULL,
  key TEXT NOT NULL,
  conversation_id TEXT,
  run_id TEXT,
  input_message_id TEXT,
  outcome TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (source, key)
) WITHOUT ROWID;
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
export const TOOL_OUTPUTS_SQL = `
CREATE TABLE tool_outputs (
  ref TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  text TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX tool_outputs_by_conversation ON tool_outputs (conversation_id);
`;

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
CREATE TABLE approvals (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  input TEXT NOT NULL,
  binding TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'cancelled')),
  decided_by TEXT,
  successor_run_id TEXT,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  decided_at_ms INTEGER
) WITHOUT ROWID;
CREATE INDEX approvals_pending ON approvals (expires_at_ms) WHERE state = 'pending';
CREATE INDEX approvals_conversation ON approvals (conversation_id, created_at_ms);
CREATE TABLE secrets (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
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
