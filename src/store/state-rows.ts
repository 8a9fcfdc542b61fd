import type { StateSave, StateSlotName, StateSlotRecord } from "../state/store.ts";
import type { Integer } from "./rows.ts";
import type { EventBody } from "./rules.ts";

/** A `conversation_state` row as either engine returns it. */
export interface StateRow {
  slot: string;
  value: string;
  version: Integer;
  actor: string;
  updated_at_ms: Integer;
}

export function toStateRecord(row: StateRow): StateSlotRecord {
  return {
    slot: row.slot as StateSlotName,
    value: JSON.parse(row.value) as unknown,
    version: Number(row.version),
    actor: row.actor as StateSlotRecord["actor"],
    updatedAtMs: Number(row.updated_at_ms),
  };
}

/** Whether a save may go ahead against the slot's current record, and the version it makes. */
export function stateDecision(
  expectedVersion: number | undefined,
  current: StateSlotRecord | null,
): { kind: "conflict" } | { kind: "save"; version: number } {
  const actual = current?.version ?? 0;
  if (expectedVersion !== undefined && expectedVersion !== actual) return { kind: "conflict" };
  return { kind: "save", version: actual + 1 };
}

/** The ledger's `state` event of a saved change. */
export function stateEvent(request: StateSave, version: number): EventBody {
  return {
    type: "state",
    conversationId: request.conversationId,
    runId: request.runId ?? "",
    slot: request.slot,
    version,
    actor: request.actor,
    value: request.value,
  };
}
