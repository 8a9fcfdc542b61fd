import type {
  Message,
  MessagePart,
  MessageStatus,
  RunState,
  StopReason,
  Usage,
} from "../../runtime/types.ts";
import type { RunRecord } from "../types.ts";

export interface RunRow {
  id: string;
  conversation_id: string;
  queue_seq: number;
  state: string;
  priority: string;
  policy: string;
  input_message_ids: string;
  assistant_message_id: string;
  owner: string | null;
  fencing_token: number;
  lease_expires_at_ms: number | null;
  stop_reason: string | null;
  steps: number;
  usage: string;
  cost_complete: number;
  absorbed_into: string | null;
  error: string | null;
  context: string;
  created_at_ms: number;
  started_at_ms: number | null;
  finished_at_ms: number | null;
}

export interface MessageRow {
  ord: number;
  id: string;
  conversation_id: string;
  run_id: string;
  role: string;
  parts: string;
  status: string;
  created_at_ms: number;
}

export function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    state: row.state as RunState,
    priority: row.priority as RunRecord["priority"],
    policy: row.policy as RunRecord["policy"],
    queueSeq: row.queue_seq,
    inputMessageIds: JSON.parse(row.input_message_ids) as string[],
    assistantMessageId: row.assistant_message_id,
    owner: row.owner,
    fencingToken: row.fencing_token,
    leaseExpiresAtMs: row.lease_expires_at_ms,
    stopReason: row.stop_reason as StopReason | null,
    steps: row.steps,
    usage: JSON.parse(row.usage) as Usage,
    costComplete: row.cost_complete === 1,
    absorbedInto: row.absorbed_into,
    error: row.error,
    context: JSON.parse(row.context) as unknown,
    createdAtMs: row.created_at_ms,
    startedAtMs: row.started_at_ms,
    finishedAtMs: row.finished_at_ms,
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
    createdAtMs: row.created_at_ms,
  };
}
