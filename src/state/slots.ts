/**
 * What the goal and todo slots hold, their bounds, and how they read in the prompt and in chat.
 * Pure: the tools and the chat commands validate with these schemas before the store saves.
 */
import { z } from "zod";
import type { ConversationState } from "./store.ts";

export const MAX_GOAL_CHARS = 500;
export const MAX_TODO_ITEMS = 30;
export const MAX_TODO_CHARS = 200;
/** Longest state block in the system prompt, in characters. */
export const MAX_STATE_BLOCK_CHARS = 2_000;

export const goalSchema = z.strictObject({
  text: z.string().trim().min(1).max(MAX_GOAL_CHARS),
  status: z.enum(["active", "done"]),
});
export type Goal = z.infer<typeof goalSchema>;

export const todoItemSchema = z.strictObject({
  text: z.string().trim().min(1).max(MAX_TODO_CHARS),
  status: z.enum(["pending", "in_progress", "done"]),
});
export const todoSchema = z.strictObject({ items: z.array(todoItemSchema).max(MAX_TODO_ITEMS) });
export type TodoList = z.infer<typeof todoSchema>;
export type TodoItem = z.infer<typeof todoItemSchema>;

/** The slot values as stored, or null when a slot is unset or holds what this build cannot read. */
export function readGoal(state: ConversationState): Goal | null {
  const parsed = goalSchema.safeParse(state.goal?.value);
  return parsed.success ? parsed.data : null;
}

export function readTodo(state: ConversationState): TodoList {
  const parsed = todoSchema.safeParse(state.todo?.value);
  return parsed.success ? parsed.data : { items: [] };
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * The block the system prompt gets: the active goal and the open todos, at most `maxChars`; empty
 * when there is neither. A finished goal and done items stay out: they no longer steer the agent.
 */
export function stateBlock(state: ConversationState, maxChars = MAX_STATE_BLOCK_CHARS): string {
  const goal = readGoal(state);
  const open = readTodo(state).items.filter((item) => item.status !== "done");
  if ((!goal || goal.status === "done") && open.length === 0) return "";
  const lines = ["Conversation state (change it with goal_set and todo_write):"];
  if (goal && goal.status === "active") lines.push(`Goal: ${clip(goal.text, 300)}`);
  if (open.length > 0) lines.push("Open todos:");
  let used = lines.join("\n").length;
  let shown = 0;
  for (const item of open) {
    const line = `- [${item.status === "in_progress" ? "in progress" : "pending"}] ${clip(item.text, 120)}`;
    if (used + 1 + line.length + 40 > maxChars) break;
    lines.push(line);
    used += 1 + line.length;
    shown += 1;
  }
  if (shown < open.length) lines.push(`- … and ${open.length - shown} more`);
  return lines.join("\n").slice(0, maxChars);
}

const MARK: Record<TodoItem["status"], string> = { pending: "☐", in_progress: "◐", done: "☑" };

/** The goal as a chat reply shows it. */
export function describeGoal(state: ConversationState): string {
  const goal = readGoal(state);
  if (!goal) return "No goal set. Set one with /goal <text>.";
  const by = state.goal?.actor === "agent" ? "the agent" : "you";
  return `Goal${goal.status === "done" ? " (done)" : ""}: ${goal.text}\n(set by ${by}, version ${state.goal?.version})`;
}

/** The todo list as a chat reply shows it. */
export function describeTodo(state: ConversationState): string {
  const { items } = readTodo(state);
  if (items.length === 0) return "No todos yet. The agent keeps this list as it works.";
  const open = items.filter((i) => i.status !== "done").length;
  return [
    `Todos: ${open} open of ${items.length}`,
    ...items.map((item, i) => `${MARK[item.status]} ${i + 1}. ${item.text}`),
  ].join("\n");
}

/** One line for /status. */
export function stateSummary(state: ConversationState): string {
  const goal = readGoal(state);
  const { items } = readTodo(state);
  const open = items.filter((i) => i.status !== "done").length;
  const goalText = goal ? `${clip(goal.text, 80)}${goal.status === "done" ? " (done)" : ""}` : "none";
  return `Goal: ${goalText} · todos: ${open} open of ${items.length}`;
}
