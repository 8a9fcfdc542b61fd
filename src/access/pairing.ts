/**
 * Pairing codes: what a user off the allowlist gets in a DM when `*_ALLOWED_USERS` includes
 * `pairing`, and what the operator approves. Pure rules; each store engine applies them.
 */

/**
 * What pairing codes and grants are kept under (their `channel`): the channel for its `default`
 * account (so grants from before accounts existed are its), `<channel>:<name>` for a named one, so
 * a user paired with one bot is not paired with another.
 */
export function accessScope(channel: string, accountName: string | undefined): string {
  return accountName === undefined ? channel : `${channel}:${accountName}`;
}

/** No 0/O, 1/I/L: a code read aloud or retyped from a phone is not misread. */
export const PAIRING_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
export const PAIRING_CODE_LENGTH = 8;
/** How long a code can be approved. */
export const PAIRING_CODE_TTL_MS = 60 * 60_000;
/** Open (unexpired, unredeemed) codes one platform user may hold. */
export const PAIRING_MAX_OPEN = 3;
/** Shortest time between two new codes for one user; within it the newest open code is repeated. */
export const PAIRING_MIN_INTERVAL_MS = 60_000;
/** Wrong approvals in the last window after which approval is refused until the window passes. */
export const PAIRING_MAX_WRONG_ATTEMPTS = 10;
export const PAIRING_WRONG_ATTEMPT_WINDOW_MS = 60 * 60_000;

/** A random code: 8 characters of PAIRING_ALPHABET (about 40 bits), unbiased (rejection sampling). */
export function generatePairingCode(
  random: (bytes: Uint8Array) => Uint8Array = (b) => crypto.getRandomValues(b),
): string {
  const n = PAIRING_ALPHABET.length;
  const limit = 256 - (256 % n);
  let code = "";
  while (code.length < PAIRING_CODE_LENGTH) {
    for (const byte of random(new Uint8Array(16))) {
      if (byte >= limit) continue;
      code += PAIRING_ALPHABET[byte % n];
      if (code.length === PAIRING_CODE_LENGTH) break;
    }
  }
  return code;
}

/**
 * What the operator typed, as a code: upper case, without spaces or dashes; null when it cannot be
 * a code at all (wrong length or a character outside the alphabet).
 */
export function normalizePairingCode(input: string): string | null {
  const code = input.replace(/[\s-]/g, "").toUpperCase();
  if (code.length !== PAIRING_CODE_LENGTH) return null;
  for (const c of code) if (!PAIRING_ALPHABET.includes(c)) return null;
  return code;
}

export interface OpenPairingCode {
  code: string;
  createdAtMs: number;
  expiresAtMs: number;
}

export type PairingIssueDecision = { kind: "new" } | { kind: "repeat"; code: OpenPairingCode };

/**
 * Whether a user with these codes gets a new one: not while they hold PAIRING_MAX_OPEN open codes,
 * nor within PAIRING_MIN_INTERVAL_MS of their last one; then their newest open code is repeated.
 */
export function decidePairingIssue(codes: readonly OpenPairingCode[], nowMs: number): PairingIssueDecision {
  const open = codes.filter((c) => c.expiresAtMs > nowMs).sort((a, b) => b.createdAtMs - a.createdAtMs);
  const newest = open[0];
  if (!newest) return { kind: "new" };
  if (open.length >= PAIRING_MAX_OPEN || nowMs - newest.createdAtMs < PAIRING_MIN_INTERVAL_MS) {
    return { kind: "repeat", code: newest };
  }
  return { kind: "new" };
}

/** What the user is told with their code. */
export function pairingMessage(code: string, expiresAtMs: number, nowMs: number): string {
  const minutes = Math.max(1, Math.round((expiresAtMs - nowMs) / 60_000));
  return (
    `You are not on this bot's list of allowed users yet. Your pairing code is ${code}. ` +
    `Send it to the operator of this bot and ask them to run: switchboard access approve ${code}. ` +
    `The code is valid for ${minutes} minutes; once it is approved, just write again.`
  );
}
