import type { HistoryMessage, SearchHit, SearchScope } from "../search/store.ts";
import type { Integer } from "./rows.ts";

/** Longest message text history_read returns, in characters. */
export const MAX_READ_TEXT_CHARS = 4_000;

export interface HitRow {
  ref: string;
  conversation_id: string;
  run_id: string;
  role: string;
  created_at_ms: Integer;
  snippet: string | null;
}

export interface HistoryRow {
  id: string;
  run_id: string;
  role: string;
  parts: string;
  created_at_ms: Integer;
}

export function toHit(row: HitRow): SearchHit {
  return {
    ref: row.ref,
    conversationId: row.conversation_id,
    runId: row.run_id,
    role: row.role === "assistant" ? "assistant" : "user",
    atMs: Number(row.created_at_ms),
    snippet: row.snippet ?? "",
  };
}

/** A message's text as the index sees it: text parts, and tool results in summary (name: output…). */
export function searchableText(partsJson: string): string {
  let parts: unknown;
  try {
    parts = JSON.parse(partsJson);
  } catch {
    return "";
  }
  if (!Array.isArray(parts)) return "";
  return parts
    .flatMap((p: { type?: string; text?: string; toolName?: string; output?: unknown }) => {
      if (p.type === "text" && typeof p.text === "string") return [p.text];
      if (p.type === "tool-result") {
        const output = typeof p.output === "string" ? p.output : JSON.stringify(p.output);
        return [`${p.toolName}: ${String(output).slice(0, 300)}`];
      }
      return [];
    })
    .join(" ");
}

export function toHistoryMessage(row: HistoryRow): HistoryMessage {
  const text = searchableText(row.parts);
  return {
    ref: row.id,
    role: row.role === "assistant" ? "assistant" : "user",
    atMs: Number(row.created_at_ms),
    runId: row.run_id,
    text: text.length > MAX_READ_TEXT_CHARS ? `${text.slice(0, MAX_READ_TEXT_CHARS - 1)}…` : text,
  };
}

/**
 * The SQL condition (on `m.conversation_id`) and its one parameter for a scope, in `?` style: what
 * a search may match and what a read may open, so the two can never disagree.
 */
export function scopeCondition(scope: SearchScope): { sql: string; param: string | null } {
  switch (scope.kind) {
    case "all":
      return scope.conversationId === undefined
        ? { sql: "1 = 1", param: null }
        : { sql: "m.conversation_id = ?", param: scope.conversationId };
    case "conversation":
      return { sql: "m.conversation_id = ?", param: scope.conversationId };
    case "principal":
      return {
        sql: "m.conversation_id IN (SELECT conversation_id FROM conversation_principals WHERE principal = ?)",
        param: scope.principal,
      };
    case "room":
      return {
        sql: "m.conversation_id IN (SELECT conversation_id FROM conversation_rooms WHERE room = ?)",
        param: scope.room,
      };
  }
}
