import { SwitchboardError } from "../src/errors.ts";
import type { OutboxState } from "./types.ts";

/**
 * The only state changes an outbox record may make. `cancelled` is final; `delivered` only
 * becomes `failed` when the platform, having accepted the message, reports that it never reached
 * the user (WhatsApp's `failed` status: outside the 24-hour window, say); operators cannot.
 * `failed` and `ambiguous` wait for an operator (retry, resolve, cancel).
 */
export const OUTBOX_TRANSITIONS = {
  pending: ["sending", "cancelled"],
  sending: ["delivered", "failed", "ambiguous", "pending"],
  ambiguous: ["pending", "delivered", "failed", "cancelled"],
  failed: ["pending", "delivered", "cancelled"],
  delivered: ["failed"],
  cancelled: [],
} as const satisfies Record<OutboxState, readonly OutboxState[]>;

export type OutboxTransition = {
  [From in OutboxState]: { from: From; to: (typeof OUTBOX_TRANSITIONS)[From][number] };
}[OutboxState];

export function canTransition(from: OutboxState, to: OutboxState): boolean {
  return (OUTBOX_TRANSITIONS[from] as readonly OutboxState[]).includes(to);
}

/** The states from which `to` may be reached, for compare-and-set updates. */
export function statesLeadingTo(to: OutboxState): OutboxState[] {
  return (Object.keys(OUTBOX_TRANSITIONS) as OutboxState[]).filter((from) => canTransition(from, to));
}

/** Throws `input_invalid` naming the record, both states and what is allowed instead. */
export function assertTransition(recordId: string, from: OutboxState, to: OutboxState): void {
  if (canTransition(from, to)) return;
  const allowed = OUTBOX_TRANSITIONS[from];
  throw new SwitchboardError(
    "state_conflict",
    `Outbox record ${recordId} is ${from} and cannot become ${to}; ` +
      (allowed.length === 0
        ? `${from} is final.`
        : `from ${from} it can only become ${allowed.join(" or ")}.`),
    { details: { recordId, from, to } },
  );
}
