import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/*
 * HMAC-SHA256 for approvals, with the key from SWITCHBOARD_APPROVAL_SECRET or one generated once
 * and kept in the database. Two uses: a request's `binding` ties its id to the exact call (id,
 * tool call id, tool name, input), checked before an approved call runs; a button's data carries
 * the id and the action with a tag, so a forged or altered press is refused.
 */

/** The approval id of one tool call of one run: stable, so a retried terminal commit names the same. */
export function approvalIdFor(runId: string, toolCallId: string): string {
  return `ap_${createHash("sha256").update(`${runId}\u0000${toolCallId}`).digest("hex").slice(0, 12)}`;
}

/** JSON with object keys sorted at every level, so equal inputs sign equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

function hmac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(payload).digest("base64url");
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface ApprovalCall {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export function bindApproval(secret: string, call: ApprovalCall): string {
  return hmac(
    secret,
    [
      "switchboard-approval-v1",
      call.approvalId,
      call.toolCallId,
      call.toolName,
      canonicalJson(call.input),
    ].join("\n"),
  );
}

export function verifyApprovalBinding(secret: string, call: ApprovalCall, binding: string): boolean {
  return sameText(bindApproval(secret, call), binding);
}

/** What a button does: approve, deny, or approve and always allow the tool in this chat. */
export type ApprovalAction = "approve" | "deny" | "always";

const ACTION_CODES: Record<ApprovalAction, string> = { approve: "a", deny: "d", always: "A" };
const TAG_CHARS = 16;

/** A button's data: `ap:<id>:<action>:<tag>`, well under Telegram's 64 bytes. */
export function signAction(secret: string, approvalId: string, action: ApprovalAction): string {
  const code = ACTION_CODES[action];
  return `ap:${approvalId}:${code}:${hmac(secret, `action\n${approvalId}\n${code}`).slice(0, TAG_CHARS)}`;
}

export type ActionCheck =
  | { ok: true; approvalId: string; action: ApprovalAction }
  | { ok: false; reason: "malformed" | "bad signature" };

/** Reads a button's data back; anything not signed with `secret` is refused. */
export function verifyAction(secret: string, data: string): ActionCheck {
  const match = /^ap:(ap_[0-9a-f]{12}):([adA]):([A-Za-z0-9_-]{16})$/.exec(data);
  if (!match) return { ok: false, reason: "malformed" };
  const [, approvalId, code, tag] = match as unknown as [string, string, string, string];
  const expected = hmac(secret, `action\n${approvalId}\n${code}`).slice(0, TAG_CHARS);
  if (!sameText(expected, tag)) return { ok: false, reason: "bad signature" };
  const action = (Object.keys(ACTION_CODES) as ApprovalAction[]).find((a) => ACTION_CODES[a] === code)!;
  return { ok: true, approvalId, action };
}
