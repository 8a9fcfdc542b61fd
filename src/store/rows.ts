import type {
  ApprovalRecord,
  ApprovalState,
  IngressReceipt,
  MessagePage,
  MessagePageItem,
  RunRecord,
} from "../runtime/store.ts";
import type { Message, MessagePart, MessageStatus, RunState, StopReason, Usage } from "../runtime/types.ts";

/**
 * An integer column as a backend returns it: bun:sqlite gives numbers, Bun's PostgreSQL client
 * gives `int8` as a string. The converters below make numbers of both.
 */
export type Integer = number | string;

const toNumberOrNull = (value: Integer | null): number | null => (value === null ? null : Number(value));

export interface RunRow {
  id: string;
  conversation_id: string;
  queue_seq: Integer;
  state: string;
  priority: string;
  policy: string;
  input_message_ids: string;
  assistant_message_id: string;
  owner: string | null;
  fencing_token: Integer;
  lease_expires_at_ms: Integer | null;
  stop_reason: string | null;
  steps: number;
  usage: string;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  cost_complete: number | boolean;
  finish_seq: Integer | null;
  absorbed_into: string | null;
  error: string | null;
  context: string;
  created_at_ms: Integer;
  started_at_ms: Integer | null;
  finished_at_ms: Integer | null;
}

export interface MessageRow {
  ord: Integer;
  id: string;
  conversation_id: string;
  run_id: string;
  role: string;
  parts: string;
  status: string;
  created_at_ms: Integer;
}

export function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    state: row.state as RunState,
    priority: row.priority as RunRecord["priority"],
    policy: row.policy as RunRecord["policy"],
    queueSeq: Number(row.queue_seq),
    inputMessageIds: JSON.parse(row.input_message_ids) as string[],
    assistantMessageId: row.assistant_message_id,
    owner: row.owner,
    fencingToken: Number(row.fencing_token),
    leaseExpiresAtMs: toNumberOrNull(row.lease_expires_at_ms),
    stopReason: row.stop_reason as StopReason | null,
    steps: row.steps,
    usage: JSON.parse(row.usage) as Usage,
    costComplete: row.cost_complete === 1 || row.cost_complete === true,
    absorbedInto: row.absorbed_into,
    error: row.error,
    context: JSON.parse(row.context) as unknown,
    createdAtMs: Number(row.created_at_ms),
    startedAtMs: toNumberOrNull(row.started_at_ms),
    finishedAtMs: toNumberOrNull(row.finished_at_ms),
  };
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    runId: row.run_id,
    role: row.role as Message["role"],
    parts: JSON.parse(row.parts) as MessagePart[],
    status: row.status as MessageStatus,
    createdAtMs: Number(row.created_at_ms),
  };
}

/**
 * One page of a conversation's messages from up to `limit + 1` rows in order (the extra row only
 * tells that another page follows), each with its run's state.
 */
export function toMessagePage(
  rows: ReadonlyArray<MessageRow & { run_state: string }>,
  limit: number,
): MessagePage {
  const items = rows.slice(0, limit).map(toMessagePageItem);
  return { items, nextAfterOrder: rows.length > limit ? (items.at(-1)?.order ?? null) : null };
}

export function toMessagePageItem(row: MessageRow & { run_state: string }): MessagePageItem {
  return { order: Number(row.ord), message: toMessage(row), runState: row.run_state as RunState };
}

export interface ApprovalRow {
  id: string;
  conversation_id: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  input: string;
  binding: string;
  state: string;
  decided_by: string | null;
  successor_run_id: string | null;
  created_at_ms: Integer;
  expires_at_ms: Integer;
  decided_at_ms: Integer | null;
}

export function toApproval(row: ApprovalRow): ApprovalRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    runId: row.run_id,
    toolCallId: row.tool_call_id,
    toolName: row.tool_name,
    input: JSON.parse(row.input) as unknown,
    binding: row.binding,
    state: row.state as ApprovalState,
    decidedBy: row.decided_by,
    successorRunId: row.successor_run_id,
    createdAtMs: Number(row.created_at_ms),
    expiresAtMs: Number(row.expires_at_ms),
    decidedAtMs: toNumberOrNull(row.decided_at_ms),
  };
}

/** The columns of `ingress_receipts` that say what an ingress identity became. */
export interface ReceiptRow {
  outcome: string;
  conversation_id: string | null;
  run_id: string | null;
  input_message_id: string | null;
}

export function toReceipt(row: ReceiptRow): IngressReceipt {
  return {
    outcome: row.outcome,
    conversationId: row.conversation_id,
    runId: row.run_id,
    inputMessageId: row.input_message_id,
  };
}
