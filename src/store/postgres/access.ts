import type { SQL } from "bun";
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
  granted_at_ms BIGINT NOT NULL,
  granted_by TEXT NOT NULL,
  PRIMARY KEY (channel, user_id)
);
CREATE TABLE pairing_codes (
  code TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT,
  update_key TEXT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  expires_at_ms BIGINT NOT NULL,
  redeemed_at_ms BIGINT,
  UNIQUE (channel, update_key)
);
CREATE INDEX pairing_codes_by_user ON pairing_codes (channel, user_id, created_at_ms);
CREATE TABLE pairing_wrong_attempts (
  id BIGSERIAL PRIMARY KEY,
  at_ms BIGINT NOT NULL
);
`;

/**
 * Migration 19: wrong pairing codes are counted per attempt key (an operator, an address), so a
 * lock after PAIRING_MAX_WRONG_ATTEMPTS holds back only whoever guessed. Earlier attempts, whose
 * author is unknown, keep the key '' that nobody uses and leave with their window.
 */
export const PAIRING_ATTEMPT_KEYS_SQL = `
ALTER TABLE pairing_wrong_attempts ADD COLUMN attempt_key TEXT NOT NULL DEFAULT '';
CREATE INDEX pairing_wrong_attempts_by_key ON pairing_wrong_attempts (attempt_key, at_ms);
`;

export function createPostgresAccessStore(sql: SQL): AccessStore {
  return {
    async issuePairingCode(r) {
      return (await sql.begin(async (tx): Promise<PairingIssueResult> => {
        // One issuer at a time per user, so the open-code limit holds under concurrent messages.
        await tx`SELECT pg_advisory_xact_lock(hashtext(${`switchboard:pairing:${r.channel}:${r.userId}`}))`;
        const [same] = await tx<CodeRow[]>`
          SELECT * FROM pairing_codes WHERE channel = ${r.channel} AND update_key = ${r.updateKey}`;
        if (same) return { outcome: "repeated", code: same.code, expiresAtMs: Number(same.expires_at_ms) };
        const rows = await tx<CodeRow[]>`
          SELECT * FROM pairing_codes
          WHERE channel = ${r.channel} AND user_id = ${r.userId} AND redeemed_at_ms IS NULL`;
        const codes = rows.map((c) => ({
          code: c.code,
          createdAtMs: Number(c.created_at_ms),
          expiresAtMs: Number(c.expires_at_ms),
        }));
        const decision = decidePairingIssue(codes, r.nowMs);
        if (decision.kind === "repeat") {
          return { outcome: "repeated", code: decision.code.code, expiresAtMs: decision.code.expiresAtMs };
        }
        const expiresAtMs = r.nowMs + PAIRING_CODE_TTL_MS;
        const inserted = await tx`
          INSERT INTO pairing_codes (code, channel, user_id, user_name, update_key, created_at_ms, expires_at_ms)
          VALUES (${r.candidate}, ${r.channel}, ${r.userId}, ${r.userName ?? null}, ${r.updateKey}, ${r.nowMs}, ${expiresAtMs})
          ON CONFLICT (code) DO NOTHING RETURNING code`;
        if (inserted.length === 0) return { outcome: "collision" };
        return { outcome: "issued", code: r.candidate, expiresAtMs };
      })) as PairingIssueResult;
    },

    async approvePairingCode(code, grantedBy, nowMs, attemptKey = grantedBy) {
      return (await sql.begin(async (tx): Promise<PairingApproveResult> => {
        // Approvals take turns, so the wrong-attempt count and a code's single redemption hold.
        await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:pairing-approve'))`;
        const since = nowMs - PAIRING_WRONG_ATTEMPT_WINDOW_MS;
        // Attempts past the window count for nobody: the table holds at most an hour of them.
        await tx`DELETE FROM pairing_wrong_attempts WHERE at_ms <= ${since}`;
        const wrong = await tx<Array<{ at_ms: string | number }>>`
          SELECT at_ms FROM pairing_wrong_attempts
          WHERE attempt_key = ${attemptKey} AND at_ms > ${since} ORDER BY at_ms`;
        if (wrong.length >= PAIRING_MAX_WRONG_ATTEMPTS) {
          return {
            outcome: "locked",
            retryAtMs:
              Number(wrong[wrong.length - PAIRING_MAX_WRONG_ATTEMPTS]!.at_ms) +
              PAIRING_WRONG_ATTEMPT_WINDOW_MS,
          };
        }
        const [row] = await tx<CodeRow[]>`SELECT * FROM pairing_codes WHERE code = ${code}`;
        if (!row) {
          await tx`INSERT INTO pairing_wrong_attempts (at_ms, attempt_key) VALUES (${nowMs}, ${attemptKey})`;
          return { outcome: "unknown", wrongAttempts: wrong.length + 1 };
        }
        const grantOf = async () => {
          const [grant] = await tx<GrantRow[]>`
            SELECT * FROM access_grants WHERE channel = ${row.channel} AND user_id = ${row.user_id}`;
          return grant ? grantFromRow(grant) : null;
        };
        if (row.redeemed_at_ms !== null) return { outcome: "already_redeemed", grant: await grantOf() };
        if (Number(row.expires_at_ms) <= nowMs) return { outcome: "expired" };
        await tx`UPDATE pairing_codes SET redeemed_at_ms = ${nowMs} WHERE code = ${code}`;
        await tx`
          INSERT INTO access_grants (channel, user_id, code, user_name, granted_at_ms, granted_by)
          VALUES (${row.channel}, ${row.user_id}, ${code}, ${row.user_name}, ${nowMs}, ${grantedBy})
          ON CONFLICT (channel, user_id) DO UPDATE SET code = excluded.code, user_name = excluded.user_name,
            granted_at_ms = excluded.granted_at_ms, granted_by = excluded.granted_by`;
        return { outcome: "approved", grant: (await grantOf())! };
      })) as PairingApproveResult;
    },

    async isGranted(channel, userId) {
      const rows = await sql`SELECT 1 FROM access_grants WHERE channel = ${channel} AND user_id = ${userId}`;
      return rows.length > 0;
    },

    async listGrants() {
      const rows = await sql<
        GrantRow[]
      >`SELECT * FROM access_grants ORDER BY granted_at_ms, channel, user_id`;
      return rows.map(grantFromRow);
    },

    async listOpenCodes(nowMs) {
      const rows = await sql<CodeRow[]>`
        SELECT * FROM pairing_codes WHERE redeemed_at_ms IS NULL AND expires_at_ms > ${nowMs}
        ORDER BY created_at_ms DESC`;
      return rows.map((c) => ({
        code: c.code,
        channel: c.channel,
        userId: c.user_id,
        userName: c.user_name,
        expiresAtMs: Number(c.expires_at_ms),
      }));
    },

    async revokeGrant(channel, userId) {
      const rows = await sql`
        DELETE FROM access_grants WHERE channel = ${channel} AND user_id = ${userId} RETURNING user_id`;
      return rows.length > 0;
    },
  };
}
