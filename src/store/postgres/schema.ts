import { SQL } from "bun";
import { SwitchboardError } from "../../errors.ts";
import { childAgentsSchemaSql } from "../child-sql.ts";
import {
  approvalsTablesSql,
  ingressReceiptsTableSql,
  messagesTableSql,
  POSTGRES_DIALECT,
  RUNS_INDEXES_SQL,
  runsTableSql,
  stepsTableSql,
  toolOutputsSql,
} from "../tables.sql.ts";
import { ACCESS_SCHEMA_SQL, PAIRING_ATTEMPT_KEYS_SQL } from "./access.ts";
import { BUDGET_ACCOUNT_PRINCIPALS_SQL, BUDGETS_SCHEMA_SQL } from "./budgets.ts";
import { OUTBOX_SCHEMA_SQL } from "./outbox.sql.ts";
import { SCHEDULE_CHAT_KEYS_SQL, SCHEDULES_SCHEMA_SQL } from "./schedules.sql.ts";
import { HISTORY_ACCOUNT_PRINCIPALS_SQL, INPUTS_AT_RUN_END_SQL, SEARCH_ROOMS_SQL } from "./search.ts";
import { SLACK_INSTALLATIONS_SQL } from "./slack-installations.ts";

/** One forward-only step of the schema. Versions are contiguous from 1. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Migration 1: conversations, runs, messages, ingress receipts, the event ledger. The SQLite
 * schema after its migrations 1 and 6: an input message carries its own admission receipt
 * (idempotency key and fingerprint). JSON is stored as text, as in SQLite: it round-trips byte
 * for byte, and jsonb would refuse a `\u0000` in a message. `queue_seq`, `finish_seq` and `ord`
 * come from sequences, drawn while the conversation's head row is locked, so within a
 * conversation they follow commit order; across conversations they are only unique.
 */
const RUNTIME_SCHEMA_SQL = `
CREATE TABLE conversations (
  id TEXT PRIMARY KEY,
  version BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL
);
CREATE TABLE conversation_tombstones (
  conversation_id TEXT PRIMARY KEY,
  purged_at_ms BIGINT NOT NULL
);
CREATE TABLE conversation_keys (
  key TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  generation INTEGER NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
${runsTableSql(POSTGRES_DIALECT)}
CREATE SEQUENCE run_finish_seqs AS BIGINT;
${RUNS_INDEXES_SQL}
${messagesTableSql(POSTGRES_DIALECT, ",\n  idempotency_key TEXT,\n  fingerprint TEXT")}
CREATE UNIQUE INDEX messages_admission ON messages (conversation_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
${stepsTableSql(POSTGRES_DIALECT)}
${ingressReceiptsTableSql(POSTGRES_DIALECT)}
CREATE TABLE events (
  conversation_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  at_ms BIGINT NOT NULL,
  PRIMARY KEY (conversation_id, seq)
);
`;

/** Migration 2: per-conversation settings (the /tz time zone); SQLite's migration 4. */
const SETTINGS_SCHEMA_SQL = `
CREATE TABLE conversation_settings (
  conversation_id TEXT PRIMARY KEY,
  settings TEXT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
`;

/** Migration 3: summaries left by summarising compaction; SQLite's migration 5. */
const SUMMARIES_SCHEMA_SQL = `
CREATE TABLE conversation_summaries (
  conversation_id TEXT PRIMARY KEY,
  text TEXT NOT NULL,
  through_finish_seq BIGINT NOT NULL,
  version BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
`;

/** Migration 7: tool results too large for the prompt, kept in full for read_output; SQLite's 10. */
const TOOL_OUTPUTS_SQL = toolOutputsSql(POSTGRES_DIALECT);

/**
 * Migration 8: media blobs, content-addressed (sha256 hex), stored as 1 MiB chunks so a put
 * streams and a standby on another host has the files. A put writes its chunks under a staging
 * id, then renames them to the blob id in one transaction; staging rows a crash left behind are
 * swept at start. SQLite keeps blobs in a directory instead (no SQLite migration).
 */
const BLOBS_SCHEMA_SQL = `
CREATE TABLE blobs (
  id TEXT PRIMARY KEY,
  size_bytes BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL
);
CREATE TABLE blob_chunks (
  blob_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  data BYTEA NOT NULL,
  created_at_ms BIGINT NOT NULL,
  PRIMARY KEY (blob_id, idx)
);
`;

/** Migration 9: per-conversation state slots (goal, todo); SQLite's migration 11. */
const STATE_SLOTS_SQL = `
CREATE TABLE conversation_state (
  conversation_id TEXT NOT NULL,
  slot TEXT NOT NULL,
  value TEXT NOT NULL,
  version BIGINT NOT NULL,
  actor TEXT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (conversation_id, slot)
);
`;

/**
 * Migration 10: history search; SQLite's migration 12. A tsvector (the 'simple' configuration, no
 * stemming, as SQLite's unicode61) with a GIN index over each message's text and tool results in
 * summary, kept by a trigger in the transaction that writes the message (since migration 18, a
 * user's input in the one that ends its run); the principals that had a turn in each
 * conversation, kept from runs the same way. Existing messages are indexed after the migration,
 * in pages (search.ts), from `search_backfill_until` down.
 */
const HISTORY_SEARCH_SQL = `
CREATE FUNCTION switchboard_search_text(parts TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fn$
  SELECT COALESCE(left(string_agg(CASE p->>'type'
    WHEN 'text' THEN p->>'text'
    WHEN 'tool-result' THEN (p->>'toolName') || ': ' || left(p->>'output', 300)
    END, ' '), 20000), '')
  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(parts::jsonb) = 'array' THEN parts::jsonb ELSE '[]'::jsonb END) AS p
$fn$;
CREATE TABLE message_search (
  ord BIGINT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  body TEXT NOT NULL,
  search TSVECTOR NOT NULL
);
CREATE INDEX message_search_terms ON message_search USING GIN (search);
CREATE FUNCTION switchboard_index_message() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM message_search WHERE ord = OLD.ord;
    RETURN OLD;
  END IF;
  INSERT INTO message_search (ord, conversation_id, body, search)
    SELECT NEW.ord, NEW.conversation_id, t.body, to_tsvector('simple', t.body)
    FROM (SELECT switchboard_search_text(NEW.parts) AS body) AS t
  ON CONFLICT (ord) DO UPDATE SET body = excluded.body, search = excluded.search;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER messages_search AFTER INSERT OR DELETE OR UPDATE OF parts ON messages
  FOR EACH ROW EXECUTE FUNCTION switchboard_index_message();
CREATE TABLE conversation_principals (
  principal TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  PRIMARY KEY (principal, conversation_id)
);
CREATE INDEX conversation_principals_conversation ON conversation_principals (conversation_id);
CREATE FUNCTION switchboard_run_principal() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF (NEW.context::jsonb -> 'principal' ->> 'id') IS NOT NULL THEN
    INSERT INTO conversation_principals (principal, conversation_id)
      VALUES ((NEW.context::jsonb ->> 'channel') || ':' || (NEW.context::jsonb -> 'principal' ->> 'id'), NEW.conversation_id)
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_principal AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION switchboard_run_principal();
CREATE FUNCTION switchboard_tombstone_principals() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM conversation_principals WHERE conversation_id = NEW.conversation_id;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER tombstone_principals AFTER INSERT ON conversation_tombstones
  FOR EACH ROW EXECUTE FUNCTION switchboard_tombstone_principals();
INSERT INTO conversation_principals (principal, conversation_id)
  SELECT DISTINCT (context::jsonb ->> 'channel') || ':' || (context::jsonb -> 'principal' ->> 'id'), conversation_id
  FROM runs WHERE jsonb_typeof(context::jsonb) = 'object' AND (context::jsonb -> 'principal' ->> 'id') IS NOT NULL
  ON CONFLICT DO NOTHING;
INSERT INTO switchboard_meta (key, value)
  VALUES ('search_backfill_until', (SELECT COALESCE(MAX(ord), 0)::text FROM messages));
`;

/** Migration 11: approval requests, generated secrets, outbox buttons/edits; SQLite's migration 13. */
const APPROVALS_SCHEMA_SQL = `
${approvalsTablesSql(POSTGRES_DIALECT)}
ALTER TABLE outbox ADD COLUMN presentation TEXT;
`;

/** Migration 12: a tombstone records who purged the conversation; SQLite's migration 14. */
const PURGED_BY_SQL = `
ALTER TABLE conversation_tombstones ADD COLUMN purged_by TEXT;
`;

/** Migration 14: the file a message record delivers (JSON OutboxMedia); SQLite's migration 16. */
const OUTBOX_MEDIA_SQL = `
ALTER TABLE outbox ADD COLUMN media TEXT;
`;

/**
 * Migration 17: what the operator's conversation search matches, lower-cased; SQLite's migration
 * 19. One row per conversation and term: the id and name of every user who had a run in it and
 * every channel key mapped to it, kept by triggers in the transaction that writes the run or the
 * key, dropped with the conversation's tombstone. A search scans this narrow table (every
 * conversation, whatever its age) instead of the runs' JSON.
 */
const CONVERSATION_LOOKUP_SQL = `
CREATE TABLE conversation_lookup (
  conversation_id TEXT NOT NULL,
  term TEXT NOT NULL,
  PRIMARY KEY (conversation_id, term)
);
CREATE FUNCTION switchboard_run_lookup() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF jsonb_typeof(NEW.context::jsonb) = 'object' THEN
    INSERT INTO conversation_lookup (conversation_id, term)
      SELECT NEW.conversation_id, lower(value) FROM (VALUES
        (NEW.context::jsonb -> 'principal' ->> 'id'),
        (NEW.context::jsonb -> 'principal' ->> 'name')
      ) AS terms (value)
      WHERE value IS NOT NULL AND value <> ''
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_lookup AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION switchboard_run_lookup();
CREATE FUNCTION switchboard_key_lookup() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO conversation_lookup (conversation_id, term) VALUES (NEW.conversation_id, lower(NEW.key))
    ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER conversation_keys_lookup AFTER INSERT OR UPDATE OF conversation_id ON conversation_keys
  FOR EACH ROW EXECUTE FUNCTION switchboard_key_lookup();
CREATE FUNCTION switchboard_tombstone_lookup() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM conversation_lookup WHERE conversation_id = NEW.conversation_id;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER tombstone_lookup AFTER INSERT ON conversation_tombstones
  FOR EACH ROW EXECUTE FUNCTION switchboard_tombstone_lookup();
INSERT INTO conversation_lookup (conversation_id, term)
  SELECT DISTINCT conversation_id, lower(value) FROM runs,
    LATERAL (VALUES (context::jsonb -> 'principal' ->> 'id'), (context::jsonb -> 'principal' ->> 'name')) AS terms (value)
  WHERE jsonb_typeof(context::jsonb) = 'object' AND value IS NOT NULL AND value <> ''
  ON CONFLICT DO NOTHING;
INSERT INTO conversation_lookup (conversation_id, term)
  SELECT DISTINCT conversation_id, lower(key) FROM conversation_keys
  ON CONFLICT DO NOTHING;
`;

/** Migration 20: a channel's durable state (Matrix's sync token and login); SQLite's migration 23. */
const CHANNEL_STATE_SQL = `
CREATE TABLE channel_state (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
`;

/**
 * Every schema step switchboard's PostgreSQL database has taken, in order. Append only. The
 * outbox and schedules came after the conversation tables, so versions do not match SQLite's.
 */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "runtime", sql: RUNTIME_SCHEMA_SQL },
  { version: 2, name: "conversation-settings", sql: SETTINGS_SCHEMA_SQL },
  { version: 3, name: "conversation-summaries", sql: SUMMARIES_SCHEMA_SQL },
  { version: 4, name: "schedules", sql: SCHEDULES_SCHEMA_SQL },
  { version: 5, name: "outbox", sql: OUTBOX_SCHEMA_SQL },
  { version: 6, name: "schedule-chat-keys", sql: SCHEDULE_CHAT_KEYS_SQL },
  { version: 7, name: "tool-outputs", sql: TOOL_OUTPUTS_SQL },
  { version: 8, name: "blobs", sql: BLOBS_SCHEMA_SQL },
  { version: 9, name: "state-slots", sql: STATE_SLOTS_SQL },
  { version: 10, name: "history-search", sql: HISTORY_SEARCH_SQL },
  { version: 11, name: "approvals", sql: APPROVALS_SCHEMA_SQL },
  { version: 12, name: "purged-by", sql: PURGED_BY_SQL },
  { version: 13, name: "access-pairing", sql: ACCESS_SCHEMA_SQL },
  { version: 14, name: "history-search-rooms", sql: SEARCH_ROOMS_SQL },
  { version: 15, name: "budgets", sql: BUDGETS_SCHEMA_SQL },
  { version: 16, name: "outbox-media", sql: OUTBOX_MEDIA_SQL },
  { version: 17, name: "conversation-lookup", sql: CONVERSATION_LOOKUP_SQL },
  { version: 18, name: "search-inputs-at-run-end", sql: INPUTS_AT_RUN_END_SQL },
  { version: 19, name: "pairing-attempt-keys", sql: PAIRING_ATTEMPT_KEYS_SQL },
  { version: 20, name: "channel-state", sql: CHANNEL_STATE_SQL },
  { version: 21, name: "child-agents", sql: childAgentsSchemaSql(POSTGRES_DIALECT) },
  { version: 22, name: "slack-installations", sql: SLACK_INSTALLATIONS_SQL },
  { version: 23, name: "budget-account-principals", sql: BUDGET_ACCOUNT_PRINCIPALS_SQL },
  { version: 24, name: "history-account-principals", sql: HISTORY_ACCOUNT_PRINCIPALS_SQL },
];

const META_TABLE = "switchboard_meta";

/**
 * Brings the database's current schema to the latest version in one transaction. Processes
 * starting together take turns on an advisory lock, so each step runs once. Refuses a newer
 * schema and a partial one (tables but no version) with an error that says what to do.
 * `migrations` is the whole list but for tests that build a database as an older version left it.
 */
export async function migrate(sql: SQL, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  const latest = migrations.length;
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:migrate'))`;
    const [where] = await tx<Array<{ database: string; schema: string }>>`
      SELECT current_database() AS database, current_schema() AS schema`;
    const place = `PostgreSQL database "${where!.database}" (schema "${where!.schema}")`;
    const current = await schemaVersion(tx);
    if (current === 0) {
      const [tables] = await tx<Array<{ n: string }>>`
        SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()`;
      if (Number(tables!.n) > 0) {
        throw new SwitchboardError(
          "schema_unsupported",
          `${place} has tables but no switchboard schema version: it is a partial or foreign database. ` +
            "Point switchboard at a new, empty database, or restore it from a backup.",
        );
      }
      await tx.unsafe(`CREATE TABLE ${META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    }
    if (current > latest) {
      throw new SwitchboardError(
        "schema_unsupported",
        `${place} has schema version ${current}, newer than this switchboard (${latest}). ` +
          "Upgrade switchboard, or restore a backup made before the upgrade.",
      );
    }
    for (const m of migrations.slice(current)) {
      await tx.unsafe(m.sql);
      await tx.unsafe(
        `INSERT INTO ${META_TABLE} (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(m.version)],
      );
    }
  });
}

/** The recorded schema version of the current schema; 0 when switchboard never migrated it. */
export async function schemaVersion(sql: SQL): Promise<number> {
  const [meta] = await sql<Array<{ present: boolean }>>`
    SELECT to_regclass(${META_TABLE}) IS NOT NULL AS present`;
  if (!meta?.present) return 0;
  const [row] = await sql.unsafe<Array<{ value: string }>>(
    `SELECT value FROM ${META_TABLE} WHERE key = 'schema_version'`,
  );
  return row ? Number(row.value) : 0;
}

/** A pool on `url` whose schema is migrated to this build's; the pool is closed if that fails. */
export async function openMigratedPool(url: string): Promise<SQL> {
  const sql = new SQL(url, { adapter: "postgres" });
  try {
    await migrate(sql);
  } catch (error) {
    await sql.close();
    throw error;
  }
  return sql;
}
