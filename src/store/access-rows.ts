import type { AccessGrant, AccessStore } from "../access/store.ts";

/** The tables of access grants, pairing codes and wrong approval attempts (same on both engines). */
export interface GrantRow {
  channel: string;
  user_id: string;
  code: string;
  user_name: string | null;
  granted_at_ms: number | string;
  granted_by: string;
}

export function grantFromRow(row: GrantRow): AccessGrant {
  return {
    channel: row.channel,
    userId: row.user_id,
    code: row.code,
    userName: row.user_name,
    grantedAtMs: Number(row.granted_at_ms),
    grantedBy: row.granted_by,
  };
}

export interface CodeRow {
  code: string;
  channel: string;
  user_id: string;
  user_name: string | null;
  update_key: string;
  created_at_ms: number | string;
  expires_at_ms: number | string;
  redeemed_at_ms: number | string | null;
}

/** An unredeemed code as `listOpenCodes` answers it. */
export function openCodeFromRow(row: CodeRow): Awaited<ReturnType<AccessStore["listOpenCodes"]>>[number] {
  return {
    code: row.code,
    channel: row.channel,
    userId: row.user_id,
    userName: row.user_name,
    expiresAtMs: Number(row.expires_at_ms),
  };
}
