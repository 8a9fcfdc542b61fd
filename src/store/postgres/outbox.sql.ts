/**
 * The outbox table on PostgreSQL: the SQLite schema (src/store/sqlite/outbox.ts) with BIGINT
 * millisecond times, a BOOLEAN `final`, and JSON (rendered, receipt, history) as text, as the
 * runtime schema stores it. `ordinal` is the causal order within (channel, account, target); the
 * partial index serves "head of each target" over the records that still block their target.
 */
export const OUTBOX_SCHEMA_SQL = `
CREATE TABLE outbox (
  id TEXT PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  account TEXT NOT NULL,
  target TEXT NOT NULL,
  reply_to TEXT,
  ordinal INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('message', 'stream')),
  markdown TEXT NOT NULL,
  final BOOLEAN NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'ambiguous', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at_ms BIGINT NOT NULL,
  rendered TEXT,
  format TEXT CHECK (format IN ('rich', 'plain')),
  chunks_delivered INTEGER NOT NULL DEFAULT 0,
  receipt TEXT,
  last_error TEXT,
  history TEXT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  UNIQUE (channel, account, target, ordinal)
);
CREATE INDEX outbox_open_by_target ON outbox (channel, account, target, ordinal)
  WHERE state IN ('pending', 'sending', 'ambiguous');
CREATE INDEX outbox_by_conversation ON outbox (conversation_id, state);
CREATE INDEX outbox_by_run ON outbox (run_id);
CREATE INDEX outbox_sending ON outbox (state) WHERE state = 'sending';
`;
