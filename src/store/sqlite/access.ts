import type { Database } from "bun:sqlite";
import {
  decidePairingIssue,
  PAIRING_CODE_TTL_MS,
  PAIRING_MAX_WRONG_ATTEMPTS,
  PAIRING_WRONG_ATTEMPT_WINDOW_MS,
} from "../../access/pairing.ts";
import type { AccessStore, PairingApproveResult, PairingIssueResult } from "../../access/store.ts";
import { type CodeRow, type GrantRow, grantFromRow } from "../access-rows.ts";

export const ACCESS_SCHEMA_SQL = `
CREATE TABLE access_grants (
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  code TEXT NOT NULL,
  user_name TEXT,
  granted_at_ms INTEGER NOT NULL,
  granted_by TEXT NOT NULL,
  PRIMARY KEY (channel, user_id)
);
CREATE TABLE pairing_codes (
  code TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT,
  update_key TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  redeemed_at_ms INTEGER,
  UNIQUE (channel, update_key)
);
CREATE INDEX pairing_codes_by_user ON pairing_codes (channel, user_id, created_at_ms);
CREATE TABLE pairing_wrong_attempts (
  id INTEGER PRIMARY KEY,
  at_ms INTEGER NOT NULL
);
`;

/**
 * Migration 22: wrong pairing codes are counted per attempt key (an operator, an address), so a
 * lock after PAIRING_MAX_WRONG_ATTEMPTS holds back only whoever guessed. Earlier attempts, whose
 * author is unknown, keep the key '' that nobody uses and leave with their window.
 */
export const PAIRING_ATTEMPT_KEYS_SQL = `
ALTER TABLE pairing_wrong_attempts ADD COLUMN attempt_key TEXT NOT NULL DEFAULT '';
CREATE INDEX pairing_wrong_attempts_by_key ON pairing_wrong_attempts (attempt_key, at_ms);
`;

export function createSqliteAccessStore(db: Database): AccessStore {
  return {
    async issuePairingCode(r) {
      return db
        .transaction((): PairingIssueResult => {
          const same = db
            .query<CodeRow, [string, string]>(
              "SELECT * FROM pairing_codes WHERE channel = ? AND update_key = ?",
            )
            .get(r.channel, r.updateKey);
          if (same) return { outcome: "repeated", code: same.code, expiresAtMs: Number(same.expires_at_ms) };
          const codes = db
            .query<CodeRow, [string, string]>(
              "SELECT * FROM pairing_codes WHERE channel = ? AND user_id = ? AND redeemed_at_ms IS NULL",
            )
            .all(r.channel, r.userId)
            .map((c) => ({
              code: c.code,
              createdAtMs: Number(c.created_at_ms),
              expiresAtMs: Number(c.expires_at_ms),
            }));
          const decision = decidePairingIssue(codes, r.nowMs);
          if (decision.kind === "repeat") {
            return { outcome: "repeated", code: decision.code.code, expiresAtMs: decision.code.expiresAtMs };
          }
          const expiresAtMs = r.nowMs + PAIRING_CODE_TTL_MS;
          const inserted = db
            .query(
              `INSERT INTO pairing_codes (code, channel, user_id, user_name, update_key, created_at_ms, expires_at_ms)
               VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (code) DO NOTHING`,
            )
            .run(r.candidate, r.channel, r.userId, r.userName ?? null, r.updateKey, r.nowMs, expiresAtMs);
          if (inserted.changes === 0) return { outcome: "collision" };
          return { outcome: "issued", code: r.candidate, expiresAtMs };
        })
        .immediate();
    },

    async approvePairingCode(code, grantedBy, nowMs, attemptKey = grantedBy) {
      return db
        .transaction((): PairingApproveResult => {
          const since = nowMs - PAIRING_WRONG_ATTEMPT_WINDOW_MS;
          // Attempts past the window count for nobody: the table holds at most an hour of them.
          db.query("DELETE FROM pairing_wrong_attempts WHERE at_ms <= ?").run(since);
          const wrong = db
            .query<{ at_ms: number }, [string, number]>(
              "SELECT at_ms FROM pairing_wrong_attempts WHERE attempt_key = ? AND at_ms > ? ORDER BY at_ms",
            )
            .all(attemptKey, since);
          if (wrong.length >= PAIRING_MAX_WRONG_ATTEMPTS) {
            return {
              outcome: "locked",
              retryAtMs:
                wrong[wrong.length - PAIRING_MAX_WRONG_ATTEMPTS]!.at_ms + PAIRING_WRONG_ATTEMPT_WINDOW_MS,
            };
          }
          const row = db.query<CodeRow, [string]>("SELECT * FROM pairing_codes WHERE code = ?").get(code);
          if (!row) {
            db.query("INSERT INTO pairing_wrong_attempts (at_ms, attempt_key) VALUES (?, ?)").run(
              nowMs,
              attemptKey,
            );
            return { outcome: "unknown", wrongAttempts: wrong.length + 1 };
          }
          const grantOf = () =>
            db
              .query<GrantRow, [string, string]>(
                "SELECT * FROM access_grants WHERE channel = ? AND user_id = ?",
              )
              .get(row.channel, row.user_id);
          if (row.redeemed_at_ms !== null) {
            const grant = grantOf();
            return { outcome: "already_redeemed", grant: grant ? grantFromRow(grant) : null };
          }
          if (Number(row.expires_at_ms) <= nowMs) return { outcome: "expired" };
          db.query("UPDATE pairing_codes SET redeemed_at_ms = ? WHERE code = ?").run(nowMs, code);
          db.query(
            `INSERT INTO access_grants (channel, user_id, code, user_name, granted_at_ms, granted_by)
             VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (channel, user_id) DO UPDATE SET code = excluded.code, user_name = excluded.user_name,
               granted_at_ms = excluded.granted_at_ms, granted_by = excluded.granted_by`,
          ).run(row.channel, row.user_id, code, row.user_name, nowMs, grantedBy);
          return { outcome: "approved", grant: grantFromRow(grantOf()!) };
        })
        .immediate();
    },

    async isGranted(channel, userId) {
      return (
        db.query("SELECT 1 FROM access_grants WHERE channel = ? AND user_id = ?").get(channel, userId) !==
        null
      );
    },

    async listGrants() {
      return db
        .query<GrantRow, []>("SELECT * FROM access_grants ORDER BY granted_at_ms, channel, user_id")
        .all()
        .map(grantFromRow);
    },

    async listOpenCodes(nowMs) {
      return db
        .query<CodeRow, [number]>(
          "SELECT * FROM pairing_codes WHERE redeemed_at_ms IS NULL AND expires_at_ms > ? ORDER BY created_at_ms DESC",
        )
        .all(nowMs)
        .map((c) => ({
          code: c.code,
          channel: c.channel,
          userId: c.user_id,
          userName: c.user_name,
          expiresAtMs: Number(c.expires_at_ms),
        }));
    },

    async revokeGrant(channel, userId) {
      return (
        db.query("DELETE FROM access_grants WHERE channel = ? AND user_id = ?").run(channel, userId).changes >
        0
      );
    },
  };
}
