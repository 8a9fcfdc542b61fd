import type { Database } from "bun:sqlite";
import type { AccessStore } from "../../access/store.ts";
import { type CodeRow, type GrantRow, grantFromRow, openCodeFromRow } from "../access-rows.ts";
import { type AccessWriteSteps, pairingMutations } from "../access-writes.ts";
import { runSync } from "../steps.ts";
import { accessSchemaSql, SQLITE_DIALECT } from "../tables.sql.ts";

/** The access tables (../tables.sql.ts). */
export const ACCESS_SCHEMA_SQL = accessSchemaSql(SQLITE_DIALECT);

/** Migration 22: wrong pairing codes are counted per attempt key (../tables.sql.ts). */
export { PAIRING_ATTEMPT_KEYS_SQL } from "../tables.sql.ts";

export function createSqliteAccessStore(db: Database): AccessStore {
  const steps = sqliteAccessSteps(db);
  return {
    ...pairingMutations(async (procedure) => db.transaction(() => runSync(procedure, steps)).immediate()),

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
        .map(openCodeFromRow);
    },

    async revokeGrant(channel, userId) {
      return (
        db.query("DELETE FROM access_grants WHERE channel = ? AND user_id = ?").run(channel, userId).changes >
        0
      );
    },
  };
}

/** The pairing mutations' reads and writes on a SQLite connection (the one writer: no locks). */
function sqliteAccessSteps(db: Database): AccessWriteSteps {
  return {
    lockIssuer: () => {},
    codeOfUpdate: (channel, updateKey) =>
      db
        .query<CodeRow, [string, string]>("SELECT * FROM pairing_codes WHERE channel = ? AND update_key = ?")
        .get(channel, updateKey),
    unredeemedCodes: (channel, userId) =>
      db
        .query<CodeRow, [string, string]>(
          "SELECT * FROM pairing_codes WHERE channel = ? AND user_id = ? AND redeemed_at_ms IS NULL",
        )
        .all(channel, userId),
    insertCode: (r, expiresAtMs) =>
      db
        .query(
          `INSERT INTO pairing_codes (code, channel, user_id, user_name, update_key, created_at_ms, expires_at_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (code) DO NOTHING`,
        )
        .run(r.candidate, r.channel, r.userId, r.userName ?? null, r.updateKey, r.nowMs, expiresAtMs)
        .changes > 0,
    lockApprovals: () => {},
    forgetAttempts: (sinceMs) => {
      db.query("DELETE FROM pairing_wrong_attempts WHERE at_ms <= ?").run(sinceMs);
    },
    wrongAttemptTimes: (attemptKey, sinceMs) =>
      db
        .query<{ at_ms: number }, [string, number]>(
          "SELECT at_ms FROM pairing_wrong_attempts WHERE attempt_key = ? AND at_ms > ? ORDER BY at_ms",
        )
        .all(attemptKey, sinceMs)
        .map((r) => r.at_ms),
    recordWrongAttempt: (attemptKey, nowMs) => {
      db.query("INSERT INTO pairing_wrong_attempts (at_ms, attempt_key) VALUES (?, ?)").run(
        nowMs,
        attemptKey,
      );
    },
    codeRow: (code) => db.query<CodeRow, [string]>("SELECT * FROM pairing_codes WHERE code = ?").get(code),
    grantOf: (channel, userId) =>
      db
        .query<GrantRow, [string, string]>("SELECT * FROM access_grants WHERE channel = ? AND user_id = ?")
        .get(channel, userId),
    redeem: (row, grantedBy, nowMs) => {
      db.query("UPDATE pairing_codes SET redeemed_at_ms = ? WHERE code = ?").run(nowMs, row.code);
      db.query(
        `INSERT INTO access_grants (channel, user_id, code, user_name, granted_at_ms, granted_by)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (channel, user_id) DO UPDATE SET code = excluded.code, user_name = excluded.user_name,
           granted_at_ms = excluded.granted_at_ms, granted_by = excluded.granted_by`,
      ).run(row.channel, row.user_id, row.code, row.user_name, nowMs, grantedBy);
    },
  };
}
