/**
 * The persistence of per-conversation state slots (goal, todo, reactions). src/store implements it on both
 * engines and must pass test/store/state-conformance.ts. Values are opaque JSON here: what a slot
 * may hold is decided by src/state/slots.ts before anything is saved.
 */

export type StateSlotName = "goal" | "todo" | "reactions";

/** Who changed a slot: the agent (through a tool) or a human (`human:<principal id>`, by command). */
export type StateActor = "agent" | `human:${string}`;

export interface StateSlotRecord {
  slot: StateSlotName;
  value: unknown;
  /** 1 after the first change, incremented by every change. A slot never set has no record. */
  version: number;
  actor: StateActor;
  updatedAtMs: number;
}

export type ConversationState = Partial<Record<StateSlotName, StateSlotRecord>>;

export interface StateSave {
  conversationId: string;
  slot: StateSlotName;
  value: unknown;
  actor: StateActor;
  /** Compare-and-set: the version the change was based on (0: never set). Absent: unconditional. */
  expectedVersion?: number;
  /** The run whose tool made the change, recorded in the ledger event; absent for a human. */
  runId?: string;
  nowMs: number;
}

export type StateSaveResult =
  | { outcome: "saved"; version: number; seq: number }
  | { outcome: "conflict"; actual: StateSlotRecord | null };

export interface StateStore {
  /** The conversation's slots, from one snapshot. Empty when none was ever set. Read-only. */
  loadState(conversationId: string): Promise<ConversationState>;

  /**
   * Sets one slot and appends a `state` event (slot, version, actor, value) to the conversation's
   * ledger, in one transaction. With `expectedVersion`, nothing is written unless the slot is at
   * that version (`conflict` carries the current record). A purged conversation throws
   * `conversation_purged`. The store's purgeConversation deletes the slots with the rest.
   */
  saveState(request: StateSave): Promise<StateSaveResult>;
}
