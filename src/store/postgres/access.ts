import type { SQL, TransactionSQL } from "bun";
import type { AccessStore } from "../../access/store.ts";
import { type CodeRow, type GrantRow, grantFromRow, openCodeFromRow } from "../access-rows.ts";
import { type AccessWriteSteps, pairingMutations } from "../access-writes.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";
import { accessSchemaSql, POSTGRES_DIALECT } from "../tables.sql.ts";

/** The access tables (../tables.sql.ts). */
export const ACCESS_SCHEMA_SQL = accessSchemaSql(POSTGRES_DIALECT);

/** Migration 19: wrong pairing codes are counted per attempt key (../tables.sql.ts). */
export { PAIRING_ATTEMPT_KEYS_SQL } from "../tables.sql.ts";

export function createPostgresAccessStore(sql: SQL): AccessStore {
  return {
    ...pairingMutations((procedure) => sql.begin((tx) => runAsync(procedure, postgresAccessSteps(tx)))),

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
      return rows.map(openCodeFromRow);
    },

    async revokeGrant(channel, userId) {
      const rows = await sql`
        DELETE FROM access_grants WHERE channel = ${channel} AND user_id = ${userId} RETURNING user_id`;
      return rows.length > 0;
    },
  };
}

/** The pairing mutations' reads and writes in the PostgreSQL transaction `tx`. */
function postgresAccessSteps(tx: TransactionSQL): AsyncSteps<AccessWriteSteps> {
  return {
    lockIssuer: async (channel, userId) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`switchboard:pairing:${channel}:${userId}`}))`;
    },
    codeOfUpdate: async (channel, updateKey) => {
      const [row] = await tx<CodeRow[]>`
        SELECT * FROM pairing_codes WHERE channel = ${channel} AND update_key = ${updateKey}`;
      return row ?? null;
    },
    unredeemedCodes: (channel, userId) => tx<CodeRow[]>`
      SELECT * FROM pairing_codes WHERE channel = ${channel} AND user_id = ${userId} AND redeemed_at_ms IS NULL`,
    insertCode: async (r, expiresAtMs) => {
      const inserted = await tx`
        INSERT INTO pairing_codes (code, channel, user_id, user_name, update_key, created_at_ms, expires_at_ms)
        VALUES (${r.candidate}, ${r.channel}, ${r.userId}, ${r.userName ?? null}, ${r.updateKey}, ${r.nowMs}, ${expiresAtMs})
        ON CONFLICT (code) DO NOTHING RETURNING code`;
      return inserted.length > 0;
    },
    lockApprovals: async () => {
      await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:pairing-approve'))`;
    },
    forgetAttempts: async (sinceMs) => {
      await tx`DELETE FROM pairing_wrong_attempts WHERE at_ms <= ${sinceMs}`;
    },
    wrongAttemptTimes: async (attemptKey, sinceMs) => {
      const rows = await tx<Array<{ at_ms: string | number }>>`
        SELECT at_ms FROM pairing_wrong_attempts
        WHERE attempt_key = ${attemptKey} AND at_ms > ${sinceMs} ORDER BY at_ms`;
      return rows.map((r) => Number(r.at_ms));
    },
    recordWrongAttempt: async (attemptKey, nowMs) => {
      await tx`INSERT INTO pairing_wrong_attempts (at_ms, attempt_key) VALUES (${nowMs}, ${attemptKey})`;
    },
    codeRow: async (code) => {
      const [row] = await tx<CodeRow[]>`SELECT * FROM pairing_codes WHERE code = ${code}`;
      return row ?? null;
    },
    grantOf: async (channel, userId) => {
      const [grant] = await tx<GrantRow[]>`
        SELECT * FROM access_grants WHERE channel = ${channel} AND user_id = ${userId}`;
      return grant ?? null;
    },
    redeem: async (row, grantedBy, nowMs) => {
      await tx`UPDATE pairing_codes SET redeemed_at_ms = ${nowMs} WHERE code = ${row.code}`;
      await tx`
        INSERT INTO access_grants (channel, user_id, code, user_name, granted_at_ms, granted_by)
        VALUES (${row.channel}, ${row.user_id}, ${row.code}, ${row.user_name}, ${nowMs}, ${grantedBy})
        ON CONFLICT (channel, user_id) DO UPDATE SET code = excluded.code, user_name = excluded.user_name,
          granted_at_ms = excluded.granted_at_ms, granted_by = excluded.granted_by`;
    },
  };
}
