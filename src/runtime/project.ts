import type { AssistantContent, ModelMessage, ToolContent, UserContent } from "ai";
import type { PromptTurn } from "./store.ts";
import type { Message, MessagePart } from "./types.ts";

/** What the model reads after an interrupted turn's partial text. */
export const INTERRUPTED_MARKER = "[interrupted: this turn was cut off before it finished]";

function userContent(message: Message): UserContent {
  const content: Exclude<UserContent, string> = [];
  for (const part of message.parts) {
    if (part.type === "text") content.push({ type: "text", text: part.text });
    if (part.type === "tool-approval-response") {
      const verdict = part.approved
        ? `approved by ${part.decidedBy}`
        : part.reason === "expired"
          ? "expired without a decision"
          : `denied by ${part.decidedBy}`;
      content.push({ type: "text", text: `[tool call ${part.toolName}: ${verdict}]` });
    }
    if (part.type === "file") {
      const size = part.sizeBytes === undefined ? "" : `, ${part.sizeBytes} bytes`;
      content.push({
        type: "text",
        text: `[attachment: ${part.name ?? part.ref} (${part.mediaType ?? "unknown type"}${size})]`,
      });
    }
  }
  return content;
}

/**
 * Turns one assistant message into provider messages: text and tool calls, then the tool results
 * as a `tool` message, and inputs that joined mid-run as user messages at the point they joined.
 * Tool calls without a result (cut off mid-call) are dropped so the prompt stays valid.
 */
function assistantMessages(message: Message, joined: ReadonlyMap<string, Message>): ModelMessage[] {
  if (message.status === "superseded" || message.status === "failed") {
    return joinedOnly(message.parts, joined);
  }
  const answered = new Set(message.parts.flatMap((p) => (p.type === "tool-result" ? [p.toolCallId] : [])));
  const out: ModelMessage[] = [];
  let assistant: Exclude<AssistantContent, string> = [];
  let tool: ToolContent = [];
  const flush = () => {
    if (assistant.length > 0) out.push({ role: "assistant", content: assistant });
    if (tool.length > 0) out.push({ role: "tool", content: tool });
    assistant = [];
    tool = [];
  };
  for (const part of message.parts) {
    switch (part.type) {
      case "text":
        if (tool.length > 0) flush();
        if (part.text.length > 0) assistant.push({ type: "text", text: part.text });
        break;
      case "tool-call":
        if (tool.length > 0) flush();
        if (answered.has(part.toolCallId)) {
          assistant.push({
            type: "tool-call",
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            input: part.input,
          });
        }
        break;
      case "tool-result":
        tool.push({
          type: "tool-result",
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: part.isError
            ? { type: "error-text", value: String(part.output) }
            : { type: "json", value: (part.output ?? null) as never },
        });
        break;
      case "joined-input": {
        flush();
        const input = joined.get(part.messageId);
        if (input) out.push({ role: "user", content: userContent(input) });
        break;
      }
      default:
        break;
    }
  }
  if (message.status === "interrupted" || message.status === "streaming") {
    if (message.status === "interrupted") {
      if (tool.length > 0) flush();
      assistant.push({ type: "text", text: INTERRUPTED_MARKER });
    }
  }
  flush();
  return out;
}

function joinedOnly(parts: readonly MessagePart[], joined: ReadonlyMap<string, Message>): ModelMessage[] {
  return parts.flatMap((p) => {
    const input = p.type === "joined-input" ? joined.get(p.messageId) : undefined;
    return input ? [{ role: "user" as const, content: userContent(input) }] : [];
  });
}

export function projectTurn(messages: readonly Message[]): ModelMessage[] {
  const joinedIds = new Set(
    messages.flatMap((m) =>
      m.role === "assistant" ? m.parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : [])) : [],
    ),
  );
  const joined = new Map(messages.filter((m) => joinedIds.has(m.id)).map((m) => [m.id, m]));
  const out: ModelMessage[] = [];
  for (const message of messages) {
    if (joinedIds.has(message.id)) continue;
    if (message.role === "user") out.push({ role: "user", content: userContent(message) });
    else out.push(...assistantMessages(message, joined));
  }
  return out;
}

/** Rough token estimate for budgeting whole turns (4 characters per token). */
export function estimateTokens(messages: readonly Message[]): number {
  let chars = 0;
  for (const m of messages) for (const p of m.parts) chars += JSON.stringify(p).length;
  return Math.ceil(chars / 4);
}

/**
 * The prompt for the next step: recent whole turns that fit `maxHistoryTokens` (oldest dropped
 * first; a turn is never split, so tool calls stay with their results), then the run's own turn.
 */
export function buildPrompt(
  history: readonly PromptTurn[],
  current: readonly Message[],
  maxHistoryTokens: number,
): ModelMessage[] {
  const kept: PromptTurn[] = [];
  let budget = maxHistoryTokens;
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i]!;
    const cost = estimateTokens(turn.messages);
    if (cost > budget) break;
    budget -= cost;
    kept.unshift(turn);
  }
  return [...kept.flatMap((t) => projectTurn(t.messages)), ...projectTurn(current)];
}
