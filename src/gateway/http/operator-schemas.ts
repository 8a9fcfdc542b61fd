/** zod schemas for every operator API query and body. Unknown fields are refused, so typos surface. */
import { z } from "zod";
import type { OutboxState } from "../../../outbox/types.ts";
import { CONVERSATION_QUERY_MAX } from "../../operator/limits.ts";
import { APPROVAL_STATES } from "../../runtime/store.ts";
import { ACTIVE_RUN_STATES, TERMINAL_RUN_STATES } from "../../runtime/types.ts";

export const OUTBOX_STATES = [
  "pending",
  "sending",
  "delivered",
  "failed",
  "ambiguous",
  "cancelled",
] as const satisfies readonly OutboxState[];
// Fails to compile when OutboxState gains a state this list lacks.
const everyOutboxState: Exclude<OutboxState, (typeof OUTBOX_STATES)[number]> extends never ? true : false =
  true;
void everyOutboxState;

const wholeNumber = "expected a whole number";
const limit = z.coerce
  .number({ error: wholeNumber })
  .int(wholeNumber)
  .min(1, "expected 1 to 1000")
  .max(1000, "expected 1 to 1000");
/** An opaque page cursor: the `nextCursor` of the previous page (checked by the operator service). */
const cursor = z
  .string()
  .min(1, "expected the nextCursor of the previous page")
  .max(400, "longer than 400 characters");
const seq = z.coerce.number({ error: wholeNumber }).int(wholeNumber).min(0, "expected 0 or more");
const id = z.string().min(1).max(200);
const note = z.string({ error: "expected a string" }).max(2000, "longer than 2000 characters");

export const runsQuery = z.strictObject({
  state: z.enum([...ACTIVE_RUN_STATES, ...TERMINAL_RUN_STATES]).optional(),
  conversation: id.optional(),
  cursor: cursor.optional(),
  limit: limit.optional(),
});

export const noQuery = z.strictObject({});

export const searchQuery = z.strictObject({
  q: z
    .string({ error: "expected the search words" })
    .min(1, "expected the search words")
    .max(256, "longer than 256 characters"),
  conversation: id.optional(),
  limit: limit.optional(),
});

export const limitQuery = z.strictObject({ limit: limit.optional() });

export const pageQuery = z.strictObject({ cursor: cursor.optional(), limit: limit.optional() });

/** The conversation list: a page, optionally only the conversations matching `q`. */
export const conversationsQuery = pageQuery.extend({
  q: z.string().max(CONVERSATION_QUERY_MAX, `longer than ${CONVERSATION_QUERY_MAX} characters`).optional(),
});

export const conversationQuery = pageQuery;

export const eventsQuery = z.strictObject({ cursor: seq.optional() });

export const outboxQuery = z.strictObject({
  state: z.enum(OUTBOX_STATES).optional(),
  conversation: id.optional(),
  cursor: cursor.optional(),
  limit: limit.optional(),
});

export const schedulesQuery = z.strictObject({
  conversation: id.optional(),
  all: z.enum(["1", "0", "true", "false"]).optional(),
});

export const approvalsQuery = z.strictObject({
  state: z.enum(APPROVAL_STATES).optional(),
  conversation: id.optional(),
  limit: limit.optional(),
});

export const noteBody = z.strictObject({ note: note.optional() });

export const resolveBody = z.strictObject({
  outcome: z.enum(["delivered", "failed"], { error: 'expected "delivered" or "failed"' }),
  note: z
    .string({ error: "required: say what you checked on the platform" })
    .trim()
    .min(1, "required: say what you checked on the platform")
    .max(2000, "longer than 2000 characters"),
});

export const emptyBody = z.strictObject({});

export const accessApproveBody = z.strictObject({
  code: z.string({ error: "expected the pairing code the bot sent the user" }).min(1).max(64),
});

const limitValue = z.number({ error: "expected a positive number" }).positive().optional();

/** A raise: the budget limits to set (each optional; the service requires at least one). */
export const budgetRaiseBody = z.strictObject({
  tokensPerDay: limitValue,
  tokensPerMonth: limitValue,
  costPerDayUsd: limitValue,
  costPerMonthUsd: limitValue,
});

export const modelBody = z.strictObject({
  model: z.string({ error: "expected a model name, or null for the default" }).min(1).max(64).nullable(),
});

/** `Last-Event-ID` as sent by EventSource on reconnect. */
export const lastEventId = seq;

/** `X-Switchboard-Actor`: who is acting, recorded as `operator:<actor>`. */
export const actorHeader = z
  .string()
  .regex(/^[A-Za-z0-9._@-]{1,64}$/, "use 1-64 characters of A-Z a-z 0-9 . _ @ -");

export const importBody = z.strictObject({
  jsonl: z.string({ error: "expected the export file's text" }).min(1, "the export is empty"),
});

export const branchBody = z.strictObject({ through: z.string().min(1).max(200).optional() });
