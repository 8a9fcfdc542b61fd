/**
 * The persistence of access grants and pairing codes. src/store implements it on both engines and
 * must pass test/store/access-conformance.ts. Rules (code shape, limits) live in ./pairing.ts.
 */

export interface AccessGrant {
  channel: string;
  userId: string;
  /** The pairing code that admitted the user. */
  code: string;
  /** The name the user had on the platform when the code was issued, when it gave one. */
  userName: string | null;
  grantedAtMs: number;
  /** Who approved: `cli`, `api`. */
  grantedBy: string;
}

export interface PairingIssueRequest {
  channel: string;
  userId: string;
  userName?: string;
  /** The platform update that asked; a redelivery of it gets the same code, never a second one. */
  updateKey: string;
  /** A fresh random code, used only when a new code is issued. */
  candidate: string;
  nowMs: number;
}

export type PairingIssueResult =
  | { outcome: "issued"; code: string; expiresAtMs: number }
  /** Limits reached (or the same update again): the newest open code, not a new one. */
  | { outcome: "repeated"; code: string; expiresAtMs: number }
  /** The candidate is another user's code already: nothing was written; try another candidate. */
  | { outcome: "collision" };

export type PairingApproveResult =
  | { outcome: "approved"; grant: AccessGrant }
  /** The code was already redeemed: nothing changes. */
  | { outcome: "already_redeemed"; grant: AccessGrant | null }
  | { outcome: "expired" }
  /** No such code; the wrong attempt was counted. */
  | { outcome: "unknown"; wrongAttempts: number }
  /** Too many wrong attempts lately by this attempt key: nothing was looked up. */
  | { outcome: "locked"; retryAtMs: number };

export interface AccessStore {
  /** Issues a code to a user off the allowlist, applying decidePairingIssue, in one transaction. */
  issuePairingCode(request: PairingIssueRequest): Promise<PairingIssueResult>;
  /**
   * Redeems a code (already normalised): stores the grant and marks the code redeemed, once. A wrong
   * code is counted against `attemptKey` (who is trying: an operator, an address; default
   * `grantedBy`); after PAIRING_MAX_WRONG_ATTEMPTS in the window, approval is locked for that key
   * only, so one guesser does not lock out the other operators. One transaction.
   */
  approvePairingCode(
    code: string,
    grantedBy: string,
    nowMs: number,
    attemptKey?: string,
  ): Promise<PairingApproveResult>;
  isGranted(channel: string, userId: string): Promise<boolean>;
  listGrants(): Promise<AccessGrant[]>;
  /** Open (unexpired, unredeemed) codes, newest first. */
  listOpenCodes(
    nowMs: number,
  ): Promise<
    Array<{ code: string; channel: string; userId: string; userName: string | null; expiresAtMs: number }>
  >;
  /** Removes the grant; false when there was none. */
  revokeGrant(channel: string, userId: string): Promise<boolean>;
}
