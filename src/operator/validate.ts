/**
 * Checks on operator input that arrives as loose strings (HTTP query strings, CLI flags) before it
 * reaches a store. Each failure is `input_invalid` naming the field, the value and what is allowed.
 */
import { OUTBOX_TRANSITIONS } from "../../outbox/transitions.ts";
import type { OutboxState } from "../../outbox/types.ts";
import { SwitchboardError } from "../errors.ts";
import { ACTIVE_RUN_STATES, type RunState, TERMINAL_RUN_STATES } from "../runtime/types.ts";
import { CONVERSATION_QUERY_MAX } from "./limits.ts";

export const RUN_STATES: readonly RunState[] = [...ACTIVE_RUN_STATES, ...TERMINAL_RUN_STATES];
export const OUTBOX_STATES = Object.keys(OUTBOX_TRANSITIONS) as OutboxState[];

export type OperatorActor = `operator:${string}`;

/** `operator:` followed by a short name without spaces (a login, an email); the HTTP API's X-Switchboard-Actor rule. */
const ACTOR_PATTERN = /^operator:[A-Za-z0-9._@-]{1,64}$/;

export function checkActor(actor: string): OperatorActor {
  if (!ACTOR_PATTERN.test(actor)) {
    throw new SwitchboardError(
      "input_invalid",
      `Actor ${JSON.stringify(actor)} is not valid: use operator:NAME, NAME being 1-64 of A-Z a-z 0-9 . _ @ -.`,
      { details: { field: "actor" } },
    );
  }
  return actor as OperatorActor;
}

export function checkOneOf<T extends string>(
  field: string,
  value: T | undefined,
  allowed: readonly T[],
): void {
  if (value !== undefined && !allowed.includes(value)) {
    throw new SwitchboardError(
      "input_invalid",
      `${field} ${JSON.stringify(value)} is not one of ${allowed.join(", ")}.`,
      { details: { field } },
    );
  }
}

/** `value` (default `fallback`) when it is an integer in 1..max. */
export function checkLimit(field: string, value: number | undefined, fallback: number, max: number): number {
  const limit = value ?? fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new SwitchboardError(
      "input_invalid",
      `${field} must be an integer from 1 to ${max}, not ${limit}.`,
      {
        details: { field },
      },
    );
  }
  return limit;
}

/** A resolution must say what the operator checked on the platform; it is the audit trail. */
export function checkNote(field: string, note: string): string {
  const trimmed = note.trim();
  if (trimmed === "") {
    throw new SwitchboardError(
      "input_invalid",
      `${field} is required: say what you checked on the platform (it is kept in the record's history).`,
      { details: { field } },
    );
  }
  return trimmed;
}

/** The conversation search trimmed, undefined when blank (no filter); `input_invalid` when too long. */
export function checkConversationQuery(field: string, value: string | undefined): string | undefined {
  const trimmed = value?.trim() ?? "";
  if (trimmed === "") return undefined;
  if (trimmed.length > CONVERSATION_QUERY_MAX) {
    throw new SwitchboardError(
      "input_invalid",
      `${field} is ${trimmed.length} characters long; search with at most ${CONVERSATION_QUERY_MAX} (part of a name, user id or channel key is enough).`,
      { details: { field } },
    );
  }
  return trimmed;
}
