/**
 * The access store's two mutations, issuing and approving a pairing code, written once for both
 * engines (see steps.ts). Each engine supplies the steps as its own SQL inside one transaction.
 */
import {
  decidePairingIssue,
  PAIRING_CODE_TTL_MS,
  PAIRING_MAX_WRONG_ATTEMPTS,
  PAIRING_WRONG_ATTEMPT_WINDOW_MS,
} from "../access/pairing.ts";
import type {
  AccessStore,
  PairingApproveResult,
  PairingIssueRequest,
  PairingIssueResult,
} from "../access/store.ts";
import { type CodeRow, type GrantRow, grantFromRow } from "./access-rows.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/** The reads and writes of the pairing mutations, each inside one transaction. */
export interface AccessWriteSteps {
  /** Makes this transaction the user's one code issuer, so the open-code limit holds (PostgreSQL). */
  lockIssuer(channel: string, userId: string): void;
  /** The code an update of `channel` was issued already; null when none. */
  codeOfUpdate(channel: string, updateKey: string): CodeRow | null;
  /** The user's codes not redeemed yet (expired ones too). */
  unredeemedCodes(channel: string, userId: string): CodeRow[];
  /** Stores a new code; false when the code exists already (another user's: nothing written). */
  insertCode(request: PairingIssueRequest, expiresAtMs: number): boolean;
  /** Makes this transaction the one approver, so attempt counts and single redemption hold (PostgreSQL). */
  lockApprovals(): void;
  /** Deletes the wrong attempts made at or before `sinceMs`. */
  forgetAttempts(sinceMs: number): void;
  /** When `attemptKey`'s wrong attempts after `sinceMs` were made, oldest first. */
  wrongAttemptTimes(attemptKey: string, sinceMs: number): number[];
  recordWrongAttempt(attemptKey: string, nowMs: number): void;
  codeRow(code: string): CodeRow | null;
  grantOf(channel: string, userId: string): GrantRow | null;
  /** Marks the code redeemed and grants its user access (replacing an earlier grant). */
  redeem(row: CodeRow, grantedBy: string, nowMs: number): void;
}

const call = stepsOf<AccessWriteSteps>();
type A<K extends keyof AccessWriteSteps> = Answer<AccessWriteSteps, K>;
type Procedure<R> = Generator<StepCall<AccessWriteSteps>, R, unknown>;

/** Issues a code to a user off the allowlist as decidePairingIssue says. */
export function* issuePairingCode(r: PairingIssueRequest): Procedure<PairingIssueResult> {
  yield call("lockIssuer", r.channel, r.userId);
  const same = (yield call("codeOfUpdate", r.channel, r.updateKey)) as A<"codeOfUpdate">;
  if (same) return { outcome: "repeated", code: same.code, expiresAtMs: Number(same.expires_at_ms) };
  const codes = ((yield call("unredeemedCodes", r.channel, r.userId)) as A<"unredeemedCodes">).map((c) => ({
    code: c.code,
    createdAtMs: Number(c.created_at_ms),
    expiresAtMs: Number(c.expires_at_ms),
  }));
  const decision = decidePairingIssue(codes, r.nowMs);
  if (decision.kind === "repeat") {
    return { outcome: "repeated", code: decision.code.code, expiresAtMs: decision.code.expiresAtMs };
  }
  const expiresAtMs = r.nowMs + PAIRING_CODE_TTL_MS;
  if (!((yield call("insertCode", r, expiresAtMs)) as A<"insertCode">)) return { outcome: "collision" };
  return { outcome: "issued", code: r.candidate, expiresAtMs };
}

/** Redeems a code once, counting a wrong one against `attemptKey` (see AccessStore). */
export function* approvePairingCode(
  code: string,
  grantedBy: string,
  nowMs: number,
  attemptKey: string,
): Procedure<PairingApproveResult> {
  yield call("lockApprovals");
  const since = nowMs - PAIRING_WRONG_ATTEMPT_WINDOW_MS;
  // Attempts past the window count for nobody: the table holds at most an hour of them.
  yield call("forgetAttempts", since);
  const wrong = (yield call("wrongAttemptTimes", attemptKey, since)) as A<"wrongAttemptTimes">;
  if (wrong.length >= PAIRING_MAX_WRONG_ATTEMPTS) {
    return {
      outcome: "locked",
      retryAtMs: wrong[wrong.length - PAIRING_MAX_WRONG_ATTEMPTS]! + PAIRING_WRONG_ATTEMPT_WINDOW_MS,
    };
  }
  const row = (yield call("codeRow", code)) as A<"codeRow">;
  if (!row) {
    yield call("recordWrongAttempt", attemptKey, nowMs);
    return { outcome: "unknown", wrongAttempts: wrong.length + 1 };
  }
  if (row.redeemed_at_ms !== null) {
    const grant = (yield call("grantOf", row.channel, row.user_id)) as A<"grantOf">;
    return { outcome: "already_redeemed", grant: grant ? grantFromRow(grant) : null };
  }
  if (Number(row.expires_at_ms) <= nowMs) return { outcome: "expired" };
  yield call("redeem", row, grantedBy, nowMs);
  const grant = (yield call("grantOf", row.channel, row.user_id)) as A<"grantOf">;
  return { outcome: "approved", grant: grantFromRow(grant!) };
}

/** The two mutations as the AccessStore's methods, each run by `transact` in one transaction. */
export function pairingMutations(
  transact: <R>(procedure: Procedure<R>) => Promise<R>,
): Pick<AccessStore, "issuePairingCode" | "approvePairingCode"> {
  return {
    issuePairingCode: (request) => transact(issuePairingCode(request)),
    approvePairingCode: (code, grantedBy, nowMs, attemptKey = grantedBy) =>
      transact(approvePairingCode(code, grantedBy, nowMs, attemptKey)),
  };
}
