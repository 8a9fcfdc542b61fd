/**
 * Schedules and their occurrences, schema version 1 of this part. Meaning of the columns:
 * - `due_at_ms`: when the scheduler must look at the row next — the slot, a retry, or the expiry
 *   of a live claim's lease; NULL for paused and ended schedules. The only column due selection
 *   reads, through a partial index.
 * - `next_at_ms`: the slot being worked on; it keeps the original slot time through retries.
 * - kind `at` uses `at_ms`; kind `every` uses `cron` or (`interval_ms`, `anchor_ms`) and a zone.
 * - An occurrence is unique per (schedule_id, scheduled_for_ms); `fencing_token` grows with every
 *   claim of that slot.
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
  at_ms INTEGER,
  cron TEXT,
  interval_ms INTEGER,
  anchor_ms INTEGER,
  timezone TEXT,
  missed_policy TEXT NOT NULL CHECK (missed_policy IN ('once', 'skip')),
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'cancelled', 'completed', 'failed')),
  next_at_ms INTEGER,
  due_at_ms INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  retry_at_ms INTEGER,
  last_error TEXT,
  last_fired_at_ms INTEGER,
  version INTEGER NOT NULL DEFAULT 1,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
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
  scheduled_for_ms INTEGER NOT NULL,
  schedule_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('claimed', 'dispatched', 'retrying', 'failed', 'skipped')),
  attempts INTEGER NOT NULL DEFAULT 0,
  late_by_ms INTEGER,
  run_id TEXT,
  last_error TEXT,
  lease_owner TEXT,
  lease_expires_at_ms INTEGER,
  fencing_token INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
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
