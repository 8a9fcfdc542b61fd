/**
 * What the OpenAPI document says of each /api route, keyed `METHOD pattern`: a summary, who may
 * call it, and the zod schemas its query, body and answer are validated with (the same objects the
 * routes use). test/http/openapi.test.ts checks that every /api route the server mounts is here.
 */
import type { z } from "zod";
import {
  conversationCreated,
  createConversationBody,
  messageAccepted,
  messageBody,
  sendAccepted,
  sendBody,
} from "./conversation-schemas.ts";
import {
  accessApproveBody,
  approvalsQuery,
  branchBody,
  budgetRaiseBody,
  conversationQuery,
  conversationsQuery,
  emptyBody,
  eventsQuery,
  importBody,
  limitQuery,
  modelBody,
  noQuery,
  noteBody,
  outboxQuery,
  resolveBody,
  runsQuery,
  schedulesQuery,
  searchQuery,
} from "./operator-schemas.ts";

export interface RouteDoc {
  summary: string;
  tag: "conversation" | "operator";
  query?: z.ZodType;
  body?: z.ZodType;
  /** The success status and its body's schema (absent: a JSON object the operator docs describe). */
  answer?: { status: number; schema?: z.ZodType; description?: string };
  /** A Server-Sent Events stream instead of JSON. */
  stream?: true;
}

/** The conversation API's own bounds, as the api channel's default config sets them. */
const MAX_CHARS = 16_000;

const op = (summary: string, extra: Omit<RouteDoc, "summary" | "tag"> = {}): RouteDoc => ({
  summary,
  tag: "operator",
  query: noQuery,
  ...extra,
});
const mutation = (summary: string, body: z.ZodType): RouteDoc => ({ summary, tag: "operator", body });

export const ROUTE_DOCS: Readonly<Record<string, RouteDoc>> = {
  "POST /api/conversations": {
    summary: "Create a conversation on the api channel (surface api:dm), owned by the calling token.",
    tag: "conversation",
    body: createConversationBody,
    answer: { status: 201, schema: conversationCreated },
  },
  "POST /api/conversations/{id}/messages": {
    summary:
      "Admit a message (durably, like a platform message). A repeat with the same idempotencyKey returns the same run.",
    tag: "conversation",
    body: messageBody(MAX_CHARS),
    answer: {
      status: 202,
      schema: messageAccepted,
      description:
        "Admitted (or the run of an earlier request with this key). A chat command answers 200 instead.",
    },
  },
  "GET /api/runs/{id}/events": {
    summary:
      "The run's events as Server-Sent Events: admitted, state, text-delta, tool-call, tool-result, approval, answer. Resume with Last-Event-ID.",
    tag: "conversation",
    query: noQuery,
    stream: true,
  },
  "POST /api/approvals/{id}/approve": {
    summary:
      "Approve a tool call waiting for a decision (an app token: only in its own conversations and those a binding's `apps` lists it in).",
    tag: "conversation",
    body: emptyBody,
  },
  "POST /api/approvals/{id}/deny": {
    summary:
      "Deny a tool call waiting for a decision (an app token: only in its own conversations and those a binding's `apps` lists it in).",
    tag: "conversation",
    body: emptyBody,
  },
  "POST /api/send": {
    summary:
      "Send a proactive message to a platform chat through the outbox (exactly once, or visibly ambiguous). An app token only where the binding matching the target lists it in `apps` (else 403).",
    tag: "conversation",
    body: sendBody(MAX_CHARS),
    answer: { status: 202, schema: sendAccepted },
  },
  "GET /api/openapi.json": {
    summary: "This document.",
    tag: "conversation",
    query: noQuery,
    answer: { status: 200, description: "An OpenAPI 3.1 document." },
  },
  "GET /api/dashboard": op("The console's dashboard: gauges, latency, readiness."),
  "GET /api/access": op("Access grants and pending pairing codes."),
  "POST /api/access/approve": mutation("Approve a pairing code.", accessApproveBody),
  "POST /api/access/{channel}/{userId}/revoke": mutation("Revoke a user's access grant.", emptyBody),
  "GET /api/budgets": op("Budgets and usage."),
  "GET /api/budgets/{scope}": op("One budget scope's status."),
  "POST /api/budgets/{scope}/raise": mutation("Raise a budget scope's limits.", budgetRaiseBody),
  "POST /api/budgets/{scope}/reset": mutation("Reset a budget scope's usage.", emptyBody),
  "POST /api/budgets/{scope}/clear": mutation("Clear a budget scope's override.", emptyBody),
  "GET /api/approvals": op("Approval requests, newest first.", { query: approvalsQuery }),
  "GET /api/runs": op("Runs, newest first.", { query: runsQuery }),
  "GET /api/runs/{id}": op("One run with its answer, steps, tool calls and child agents (the tree)."),
  "GET /api/conversations": op("Conversations, most recently active first.", { query: conversationsQuery }),
  "GET /api/conversations/{id}": op("One conversation and a page of its messages.", {
    query: conversationQuery,
  }),
  "GET /api/conversations/{id}/settings": op(
    "The settings in force for a conversation, and where each comes from.",
  ),
  "GET /api/conversations/{id}/usage": op("A conversation's usage this day and month."),
  "GET /api/conversations/{id}/events": op("A conversation's runtime events (Server-Sent Events).", {
    query: eventsQuery,
    stream: true,
  }),
  "GET /api/search": op("Search the history.", { query: searchQuery }),
  "POST /api/conversations/{id}/model": mutation("Set a conversation's model.", modelBody),
  "POST /api/conversations/import": mutation("Import a JSONL export as a new conversation.", importBody),
  "GET /api/conversations/{id}/export": op("A conversation's export."),
  "POST /api/conversations/{id}/branch": mutation("Copy a conversation's settled prefix.", branchBody),
  "POST /api/conversations/{id}/purge": mutation("Forget a conversation for good.", emptyBody),
  "GET /api/outbox": op("Outbox records, newest first.", { query: outboxQuery }),
  "GET /api/outbox/{id}": op("One outbox record."),
  "POST /api/outbox/{id}/retry": mutation("Retry a failed or ambiguous record.", noteBody),
  "POST /api/outbox/{id}/resolve": mutation(
    "Resolve an ambiguous record as delivered or failed.",
    resolveBody,
  ),
  "POST /api/outbox/{id}/cancel": mutation("Cancel an undelivered record.", noteBody),
  "GET /api/events": op("What changed anywhere (Server-Sent Events), for live lists.", { stream: true }),
  "GET /api/schedules": op("Schedules.", { query: schedulesQuery }),
  "GET /api/schedules/{id}/runs": op("A schedule's occurrences.", { query: limitQuery }),
  "POST /api/schedules/{id}/pause": mutation("Pause a schedule.", emptyBody),
  "POST /api/schedules/{id}/resume": mutation("Resume a schedule.", emptyBody),
  "POST /api/schedules/{id}/cancel": mutation("Cancel a schedule.", emptyBody),
};
