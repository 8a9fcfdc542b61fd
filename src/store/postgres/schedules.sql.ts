/**
 * Migration 4: schedules and their occurrences, SQLite's migration 3 with the same columns,
 * constraints and indexes (src/store/sqlite/schedules.sql.ts says what the columns mean). Times
 * in ms, versions and fencing tokens are BIGINT; counts are INTEGER.
 */
export const SCHEDULES_SCHEMA_SQL = `
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  reply_target TEXT NOT NULL,
  channel TEXT NOT NULL,
  created_by TEXT NOT NULL CHECK (created_by IN ('user', 'agent', 'operator')),
  prompt TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('at', 'every')),
  at_ms BIGINT,
  cron TEXT,
  interval_ms BIGINT,
  anchor_ms BIGINT,
  timezone TEXT,
  missed_policy TEXT NOT NULL CHECK (missed_policy IN ('once', 'skip')),
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'cancelled', 'completed', 'failed')),
  next_at_ms BIGINT,
  due_at_ms BIGINT,
  attempts INTEGER NOT NULL DEFAULT 0,
  retry_at_ms BIGINT,
  last_error TEXT,
  last_fired_at_ms BIGINT,
  version BIGINT NOT NULL DEFAULT 1,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  CHECK (
    (kind = 'at' AND at_ms IS NOT NULL AND cron IS NULL AND interval_ms IS NULL)
    OR (kind = 'every' AND timezone IS NOT NULL AND at_ms IS NULL AND (
      (cron IS NOT NULL AND interval_ms IS NULL AND anchor_ms IS NULL)
      OR (cron IS NULL AND interval_ms > 0 AND anchor_ms IS NOT NULL)))
  ),
  CHECK (due_at_ms IS NULL OR state = 'active')
);
CREATE INDEX schedules_due ON schedules (due_at_ms) WHERE due_at_ms IS NOT NULL;
CREATE INDEX schedules_conversation ON schedules (conversation_id, created_at_ms);
CREATE TABLE schedule_occurrences (
  schedule_id TEXT NOT NULL,
  scheduled_for_ms BIGINT NOT NULL,
  schedule_version BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('claimed', 'dispatched', 'retrying', 'failed', 'skipped')),
  attempts INTEGER NOT NULL DEFAULT 0,
  late_by_ms BIGINT,
  run_id TEXT,
  last_error TEXT,
  lease_owner TEXT,
  lease_expires_at_ms BIGINT,
  fencing_token BIGINT NOT NULL DEFAULT 0,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (schedule_id, scheduled_for_ms)
);
CREATE INDEX schedule_occurrences_retrying ON schedule_occurrences (schedule_id) WHERE state = 'retrying';
`;

/**
 * Schedules belong to the chat (its conversation key), which outlives /new. Existing rows take the
 * key their conversation still holds; one left behind by /new keeps NULL and its conversation.
 */
export const SCHEDULE_CHAT_KEYS_SQL = `
ALTER TABLE schedules ADD COLUMN chat_key TEXT;
UPDATE schedules SET chat_key = (
  SELECT k.key FROM conversation_keys k WHERE k.conversation_id = schedules.conversation_id LIMIT 1
);
CREATE INDEX schedules_chat ON schedules (chat_key, created_at_ms) WHERE chat_key IS NOT NULL;
`;
