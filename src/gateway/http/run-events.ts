/**
 * One run's events as the conversation API streams them (`GET /api/runs/:id/events`), derived
 * from the conversation's ledger and its live events.
 *
 * Every event derived from a durable ledger event has an id, `<seq>` or `<seq>.<n>` for the n-th
 * further event made from the same ledger event; the derivation is a pure function of the run's
 * ledger, so replaying it from the start and skipping up to `Last-Event-ID` resumes exactly where
 * a client left off. Live-only events (text deltas, tool status) carry no id: after a reconnect
 * the next `step` or the `answer` carries the whole text so far.
 */
import type { RuntimeEvent } from "../../runtime/events.ts";

export interface RunStreamEvent {
  /** Absent for live-only events. */
  id?: string;
  event: RunStreamEventName;
  data: Record<string, unknown>;
}

export const RUN_STREAM_EVENTS = [
  "admitted",
  "state",
  "text-delta",
  "attempt-reset",
  "tool-status",
  "step",
  "tool-call",
  "tool-result",
  "approval",
  "answer",
] as const;
export type RunStreamEventName = (typeof RUN_STREAM_EVENTS)[number];

/** What the derivation remembers of the run's earlier events: the tool calls and results told. */
export interface RunStreamMemory {
  calls: Set<string>;
  results: Set<string>;
}

export function newRunStreamMemory(): RunStreamMemory {
  return { calls: new Set(), results: new Set() };
}

/** A position in the stream: the ledger seq and the index of the event made from it. */
export interface StreamPosition {
  seq: number;
  index: number;
}

/** `Last-Event-ID` as this stream writes ids; null when it is not one. */
export function parseStreamPosition(value: string): StreamPosition | null {
  const match = /^(\d{1,15})(?:\.(\d{1,6}))?$/.exec(value);
  if (!match) return null;
  return { seq: Number(match[1]), index: match[2] === undefined ? 0 : Number(match[2]) };
}

/** True when the event at `id` comes after `position` (the client has not seen it). */
export function isAfter(id: string, position: StreamPosition | null): boolean {
  if (position === null) return true;
  const at = parseStreamPosition(id)!;
  return at.seq > position.seq || (at.seq === position.seq && at.index > position.index);
}

/**
 * The stream events one runtime event of run `runId` makes (none for another run's), updating
 * `memory`. A `terminal` event makes the `answer`, always the last.
 */
export function toRunStreamEvents(
  event: RuntimeEvent,
  runId: string,
  memory: RunStreamMemory,
): RunStreamEvent[] {
  if (event.runId !== runId) return [];
  if (!event.durable) {
    switch (event.type) {
      case "assistant-delta":
        return [{ event: "text-delta", data: { delta: event.delta } }];
      case "attempt-reset":
        return [{ event: "attempt-reset", data: { reason: event.reason } }];
      case "tool-status":
        return [
          {
            event: "tool-status",
            data: { toolCallId: event.toolCallId, toolName: event.toolName, status: event.status },
          },
        ];
      default:
        return [];
    }
  }
  const made: Array<Omit<RunStreamEvent, "id">> = [];
  switch (event.type) {
    case "admission":
      made.push({
        event: "admitted",
        data: { runId, conversationId: event.conversationId, outcome: event.outcome },
      });
      break;
    case "run-state":
      made.push({ event: "state", data: { state: event.state } });
      break;
    case "checkpoint":
      made.push({ event: "step", data: { step: event.step, text: event.text } });
      made.push(...toolEvents(event.tools ?? [], memory));
      break;
    case "terminal":
      made.push(...toolEvents(event.tools ?? [], memory));
      for (const approval of event.approvals ?? []) made.push({ event: "approval", data: { ...approval } });
      made.push({
        event: "answer",
        data: {
          state: event.state,
          text: event.text,
          usage: event.usage,
          ...(event.error ? { error: event.error } : {}),
          ...(event.absorbedInto ? { absorbedInto: event.absorbedInto } : {}),
        },
      });
      break;
    default:
      break;
  }
  return made.map((item, index) => ({ ...item, id: index === 0 ? `${event.seq}` : `${event.seq}.${index}` }));
}

function toolEvents(
  tools: NonNullable<Extract<RuntimeEvent, { type: "checkpoint" }>["tools"]>,
  memory: RunStreamMemory,
): Array<Omit<RunStreamEvent, "id">> {
  const made: Array<Omit<RunStreamEvent, "id">> = [];
  for (const tool of tools) {
    if (!memory.calls.has(tool.toolCallId)) {
      memory.calls.add(tool.toolCallId);
      made.push({
        event: "tool-call",
        data: { toolCallId: tool.toolCallId, toolName: tool.toolName, input: tool.input },
      });
    }
    if (tool.outcome && !memory.results.has(tool.toolCallId)) {
      memory.results.add(tool.toolCallId);
      made.push({
        event: "tool-result",
        data: { toolCallId: tool.toolCallId, toolName: tool.toolName, outcome: tool.outcome },
      });
    }
  }
  return made;
}

/** One event in the wire format. */
export function formatRunStreamEvent(event: RunStreamEvent): string {
  const id = event.id === undefined ? "" : `id: ${event.id}\n`;
  return `${id}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
