import type { RunState, Usage } from "./types.ts";

/**
 * What the runtime tells subscribers. Durable events (`durable: true`) are also in the
 * conversation's ledger with a monotonic `seq`; transient ones (deltas, attempt-reset,
 * tool-status) carry a per-run `sequence` and are only published live.
 */
export type RuntimeEvent =
  | {
      type: "admission";
      durable: true;
      seq: number;
      conversationId: string;
      runId: string;
      inputMessageId: string;
      outcome: "admitted" | "coalesced";
    }
  | {
      type: "run-state";
      durable: true;
      seq: number;
      conversationId: string;
      runId: string;
      state: RunState;
    }
  | {
      type: "checkpoint";
      durable: true;
      seq: number;
      conversationId: string;
      runId: string;
      step: number;
      /** How long the step's model call took. */
      durationMs: number;
      /** Text of the assistant so far (all steps). */
      text: string;
      /** The run's tool calls so far (all steps), when it made any. */
      tools?: ToolTrace[];
    }
  | {
      type: "terminal";
      durable: true;
      seq: number;
      conversationId: string;
      runId: string;
      state: RunState;
      /** The canonical answer text (empty when the run produced none). */
      text: string;
      usage: Usage;
      /** For `absorbed`: the run that answered this one's input. */
      absorbedInto?: string;
      error?: string;
      /** The run's tool calls (all steps), when it made any. */
      tools?: ToolTrace[];
      /** For `awaiting_approval`: the calls that wait for a person's decision. */
      approvals?: Array<{ approvalId: string; toolCallId: string; toolName: string }>;
    }
  | {
      /** A state slot (goal, todo, reactions) changed; `value` is the slot's whole new value. */
      type: "state";
      durable: true;
      seq: number;
      conversationId: string;
      /** The run whose tool made the change; "" for a human's command. */
      runId: string;
      slot: "goal" | "todo" | "reactions";
      version: number;
      /** `agent`, or `human:<principal id>`. */
      actor: string;
      value: unknown;
    }
  | {
      type: "assistant-delta" | "reasoning-delta";
      durable: false;
      conversationId: string;
      runId: string;
      sequence: number;
      delta: string;
    }
  | {
      type: "attempt-reset";
      durable: false;
      conversationId: string;
      runId: string;
      sequence: number;
      reason: string;
    }
  | {
      type: "tool-status";
      durable: false;
      conversationId: string;
      runId: string;
      sequence: number;
      toolCallId: string;
      toolName: string;
      status: "started" | "completed" | "failed";
    };

/** A tool call as the ledger records it: `outcome` once its result is saved. */
export interface ToolTrace {
  toolCallId: string;
  toolName: string;
  input: unknown;
  outcome?: "ok" | "error";
}

export type DurableEvent = Extract<RuntimeEvent, { durable: true }>;
export type TransientEvent = Extract<RuntimeEvent, { durable: false }>;
