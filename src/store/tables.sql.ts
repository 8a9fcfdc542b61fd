/**
 * Tables both engines create with the same columns, constraints and indexes, written once: only
 * the column types below differ. SQLite's INTEGER holds 64 bits, it has no boolean, and an INTEGER
 * PRIMARY KEY numbers itself; PostgreSQL needs BIGINT for times in ms (and for versions and
 * fencing tokens), has BOOLEAN, and numbers a key with BIGSERIAL.
 */
export interface Dialect {
  /** A 64-bit integer: a time in ms, a version, a fencing token. */
  big: "INTEGER" | "BIGINT";
  /** A NOT NULL yes/no column named `column`. */
  flag(column: string): string;
  /** A primary key the database numbers itself. */
  serial: "INTEGER PRIMARY KEY" | "BIGSERIAL PRIMARY KEY";
  /** A floating-point number. */
  real: "REAL" | "DOUBLE PRECISION";
  /** After a table keyed by its primary key alone (SQLite stores it as that key's index). */
  keyed: " WITHOUT ROWID" | "";
  /** An integer primary key numbered in insertion order. */
  identity: "INTEGER PRIMARY KEY" | "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY";
  /** A NOT NULL yes/no column that starts as yes. */
  flagYes: "INTEGER NOT NULL DEFAULT 1" | "BOOLEAN NOT NULL DEFAULT TRUE";
}

export const SQLITE_DIALECT: Dialect = {
  big: "INTEGER",
  flag: (column) => `INTEGER NOT NULL CHECK (${column} IN (0, 1))`,
  serial: "INTEGER PRIMARY KEY",
  real: "REAL",
  keyed: " WITHOUT ROWID",
  identity: "INTEGER PRIMARY KEY",
  flagYes: "INTEGER NOT NULL DEFAULT 1",
};
export const POSTGRES_DIALECT: Dialect = {
  big: "BIGINT",
  flag: () => "BOOLEAN NOT NULL",
  serial: "BIGSERIAL PRIMARY KEY",
  real: "DOUBLE PRECISION",
  keyed: "",
  identity: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
  flagYes: "BOOLEAN NOT NULL DEFAULT TRUE",
};

/**
 * The outbox table (SQLite's migration 2, PostgreSQL's 5); JSON (rendered, receipt, history) is
 * text. `ordinal` is the causal order within (channel, account, target); the partial index serves
 * "head of each target" over the records that still block their target.
 */
export const outboxSchemaSql = ({ big, flag }: Dialect): string => `
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
  final ${flag("final")},
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'ambiguous', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at_ms ${big} NOT NULL,
  rendered TEXT,
  format TEXT CHECK (format IN ('rich', 'plain')),
  chunks_delivered INTEGER NOT NULL DEFAULT 0,
  receipt TEXT,
  last_error TEXT,
  history TEXT NOT NULL,
  created_at_ms ${big} NOT NULL,
  updated_at_ms ${big} NOT NULL,
  UNIQUE (channel, account, target, ordinal)
);
CREATE INDEX outbox_open_by_target ON outbox (channel, account, target, ordinal)
  WHERE state IN ('pending', 'sending', 'ambiguous');
CREATE INDEX outbox_by_conversation ON outbox (conversation_id, state);
CREATE INDEX outbox_by_run ON outbox (run_id);
CREATE INDEX outbox_sending ON outbox (state) WHERE state = 'sending';
`;

/**
 * Schedules and their occurrences (SQLite's migration 3, PostgreSQL's 4). Meaning of the columns:
 * - `due_at_ms`: when the scheduler must look at the row next — the slot, a retry, or the expiry
 *   of a live claim's lease; NULL for paused and ended schedules. The only column due selection
 *   reads, through a partial index.
 * - `next_at_ms`: the slot being worked on; it keeps the original slot time through retries.
 * - kind `at` uses `at_ms`; kind `every` uses `cron` or (`interval_ms`, `anchor_ms`) and a zone.
 * - An occurrence is unique per (schedule_id, scheduled_for_ms); `fencing_token` grows with every
 *   claim of that slot.
 */
export const schedulesSchemaSql = ({ big }: Dialect): string => `
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  reply_target TEXT NOT NULL,
  channel TEXT NOT NULL,
  created_by TEXT NOT NULL CHECK (created_by IN ('user', 'agent', 'operator')),
  prompt TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('at', 'every')),
  at_ms ${big},
  cron TEXT,
  interval_ms ${big},
  anchor_ms ${big},
  timezone TEXT,
  missed_policy TEXT NOT NULL CHECK (missed_policy IN ('once', 'skip')),
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'cancelled', 'completed', 'failed')),
  next_at_ms ${big},
  due_at_ms ${big},
  attempts INTEGER NOT NULL DEFAULT 0,
  retry_at_ms ${big},
  last_error TEXT,
  last_fired_at_ms ${big},
  version ${big} NOT NULL DEFAULT 1,
  created_at_ms ${big} NOT NULL,
  updated_at_ms ${big} NOT NULL,
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
  scheduled_for_ms ${big} NOT NULL,
  schedule_version ${big} NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('claimed', 'dispatched', 'retrying', 'failed', 'skipped')),
  attempts INTEGER NOT NULL DEFAULT 0,
  late_by_ms ${big},
  run_id TEXT,
  last_error TEXT,
  lease_owner TEXT,
  lease_expires_at_ms ${big},
  fencing_token ${big} NOT NULL DEFAULT 0,
  created_at_ms ${big} NOT NULL,
  updated_at_ms ${big} NOT NULL,
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

/** Access grants, pairing codes and wrong approval attempts. */
export const accessSchemaSql = ({ big, serial }: Dialect): string => `
CREATE TABLE access_grants (
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  code TEXT NOT NULL,
  user_name TEXT,
  granted_at_ms ${big} NOT NULL,
  granted_by TEXT NOT NULL,
  PRIMARY KEY (channel, user_id)
);
CREATE TABLE pairing_codes (
  code TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT,
  update_key TEXT NOT NULL,
  created_at_ms ${big} NOT NULL,
  expires_at_ms ${big} NOT NULL,
  redeemed_at_ms ${big},
  UNIQUE (channel, update_key)
);
CREATE INDEX pairing_codes_by_user ON pairing_codes (channel, user_id, created_at_ms);
CREATE TABLE pairing_wrong_attempts (
  id ${serial},
  at_ms ${big} NOT NULL
);
`;

/**
 * Wrong pairing codes are counted per attempt key (an operator, an address), so a lock after
 * PAIRING_MAX_WRONG_ATTEMPTS holds back only whoever guessed. Earlier attempts, whose author is
 * unknown, keep the key '' that nobody uses and leave with their window.
 */
export const PAIRING_ATTEMPT_KEYS_SQL = `
ALTER TABLE pairing_wrong_attempts ADD COLUMN attempt_key TEXT NOT NULL DEFAULT '';
CREATE INDEX pairing_wrong_attempts_by_key ON pairing_wrong_attempts (attempt_key, at_ms);
`;

/**
 * Budget usage per run (each engine keeps it with its own triggers from the runs' recorded
 * usage), and operators' raised limits and resets.
 */
export const budgetTablesSql = ({ big, real, keyed }: Dialect): string => `
CREATE TABLE budget_usage (
  run_id TEXT PRIMARY KEY,
  principal TEXT,
  channel TEXT NOT NULL,
  surface TEXT NOT NULL,
  conversation_id TEXT,
  at_ms ${big} NOT NULL,
  tokens ${big},
  cost_usd ${real}
)${keyed};
CREATE INDEX budget_usage_principal ON budget_usage (principal, at_ms);
CREATE INDEX budget_usage_at ON budget_usage (at_ms);
CREATE INDEX budget_usage_conversation ON budget_usage (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE TABLE budget_overrides (
  scope TEXT PRIMARY KEY,
  limits TEXT,
  reset_at_ms ${big},
  updated_at_ms ${big} NOT NULL,
  updated_by TEXT NOT NULL
)${keyed};
`;

// ---- the runtime's tables: each engine's migrations put these in their own order ----

/** The runs table: `queue_seq` is admission order. */
export const runsTableSql = ({ big, identity, flagYes }: Dialect): string => `CREATE TABLE runs (
  queue_seq ${identity},
  id TEXT NOT NULL UNIQUE,
  conversation_id TEXT NOT NULL,
  state TEXT NOT NULL,
  priority TEXT NOT NULL,
  policy TEXT NOT NULL,
  input_message_ids TEXT NOT NULL,
  assistant_message_id TEXT NOT NULL,
  owner TEXT,
  fencing_token ${big} NOT NULL DEFAULT 0,
  lease_expires_at_ms ${big},
  stop_reason TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  usage TEXT NOT NULL DEFAULT '{}',
  cost_complete ${flagYes},
  absorbed_into TEXT,
  error TEXT,
  context TEXT NOT NULL,
  created_at_ms ${big} NOT NULL,
  started_at_ms ${big},
  finished_at_ms ${big},
  finish_seq ${big}
);`;

/** The runs' indexes: finish order, the active queue, a conversation's active and finished runs. */
export const RUNS_INDEXES_SQL = `CREATE UNIQUE INDEX runs_finish_seq ON runs (finish_seq) WHERE finish_seq IS NOT NULL;
CREATE INDEX runs_active ON runs (queue_seq) WHERE state IN ('queued', 'running', 'interrupt_requested');
CREATE INDEX runs_conversation_active ON runs (conversation_id, queue_seq)
  WHERE state IN ('queued', 'running', 'interrupt_requested');
CREATE INDEX runs_conversation_finished ON runs (conversation_id, finish_seq) WHERE finish_seq IS NOT NULL;`;

/**
 * Every message in conversation order (`ord`), and its indexes; `more` adds columns (PostgreSQL
 * keeps an admission's idempotency key and fingerprint on its input message).
 */
export const messagesTableSql = ({ big, identity }: Dialect, more = ""): string => `CREATE TABLE messages (
  ord ${identity},
  id TEXT NOT NULL UNIQUE,
  conversation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  role TEXT NOT NULL,
  parts TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at_ms ${big} NOT NULL${more}
);
CREATE INDEX messages_conversation ON messages (conversation_id, ord);
CREATE INDEX messages_run ON messages (run_id);`;

/** A run's model steps. */
export const stepsTableSql = ({ big, keyed }: Dialect): string => `CREATE TABLE steps (
  run_id TEXT NOT NULL,
  step INTEGER NOT NULL,
  model TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  usage TEXT NOT NULL,
  started_at_ms ${big} NOT NULL,
  finished_at_ms ${big} NOT NULL,
  PRIMARY KEY (run_id, step)
)${keyed};`;

/** What each ingress (source, key) was recorded as. */
export const ingressReceiptsTableSql = ({ big, keyed }: Dialect): string => `CREATE TABLE ingress_receipts (
  source TEXT NOT NULL,
  key TEXT NOT NULL,
  conversation_id TEXT,
  run_id TEXT,
  input_message_id TEXT,
  outcome TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at_ms ${big} NOT NULL,
  PRIMARY KEY (source, key)
)${keyed};`;

/** Tool results too large for the prompt, kept in full for read_output. */
export const toolOutputsSql = ({ big }: Dialect): string => `
CREATE TABLE tool_outputs (
  ref TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  text TEXT NOT NULL,
  created_at_ms ${big} NOT NULL
);
CREATE INDEX tool_outputs_by_conversation ON tool_outputs (conversation_id);
`;

/**
 * Approval requests (written with the asking run's terminal commit, decided with the successor's
 * admission) and secrets generated once (the approval signing key).
 */
export const approvalsTablesSql = ({ big, keyed }: Dialect): string => `CREATE TABLE approvals (
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
  created_at_ms ${big} NOT NULL,
  expires_at_ms ${big} NOT NULL,
  decided_at_ms ${big}
)${keyed};
CREATE INDEX approvals_pending ON approvals (expires_at_ms) WHERE state = 'pending';
CREATE INDEX approvals_conversation ON approvals (conversation_id, created_at_ms);
CREATE TABLE secrets (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at_ms ${big} NOT NULL
)${keyed};`;
