/**
 * The order the chat page shows its transcript in: the gateway's stored order, never the order
 * events happened to arrive in. Pure, so it is tested without a browser (test/http/transcript-order.test.ts).
 *
 * The gateway stamps every message with `atMs` from its one clock: a user's message with when it
 * was received, an answer with when it was sent, so an answer always stamps later than the
 * message it answers, however the two race to the page (the run may answer before the POST that
 * carried the question returns). The stored transcript (src/gateway/web-history.ts) sorts the same
 * way, so a reload shows what the live page showed.
 */

/** A message the gateway confirmed, with the page-local count of when the page first saw it. */
export interface ConfirmedEntry {
  role: "user" | "assistant";
  atMs: number;
  /** Page-local sequence number of when the page first saw this message id (or sent it). */
  seen: number;
}

/** A message the page sent that the gateway has not confirmed yet (sending, sent, or failed). */
export interface PendingEntry {
  /** Page-local sequence number taken when the user sent it. */
  seen: number;
}

export type Placed<C, P> = { kind: "confirmed"; entry: C } | { kind: "pending"; entry: P };

/**
 * Stored order: by `atMs`, a user's message before an answer stamped the same millisecond (as the
 * stored transcript does), then in the order the page first saw them.
 */
export function compareConfirmed(a: ConfirmedEntry, b: ConfirmedEntry): number {
  return a.atMs - b.atMs || roleRank(a.role) - roleRank(b.role) || a.seen - b.seen;
}

/**
 * The confirmed messages in stored order, and each pending one (it has no gateway stamp yet, and
 * the page's clock is not the gateway's) right after the last confirmed message the page had seen
 * when it was sent: an answer that arrives before its question is confirmed still shows below it.
 */
export function orderTranscript<C extends ConfirmedEntry, P extends PendingEntry>(
  confirmed: readonly C[],
  pending: readonly P[],
): Array<Placed<C, P>> {
  const placed: Array<Placed<C, P>> = [...confirmed]
    .sort(compareConfirmed)
    .map((entry) => ({ kind: "confirmed", entry }));
  for (const entry of [...pending].sort((a, b) => a.seen - b.seen)) {
    let at = placed.length;
    while (at > 0 && placed[at - 1]!.entry.seen > entry.seen) at--;
    placed.splice(at, 0, { kind: "pending", entry });
  }
  return placed;
}

function roleRank(role: ConfirmedEntry["role"]): number {
  return role === "user" ? 0 : 1;
}
