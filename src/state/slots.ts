/**
 * What the goal, todo and reactions slots hold, their bounds, and how they read in the prompt and
 * in chat. Pure: the tools, the chat commands and the reaction note validate with these schemas
 * before the store saves.
 */
import { z } from "zod";
import type { ConversationState } from "./store.ts";

export const MAX_GOAL_CHARS = 500;
export const MAX_TODO_ITEMS = 30;
export const MAX_TODO_CHARS = 200;
/** Reactions the reactions slot keeps: the latest ones, the oldest dropped first. */
export const MAX_REACTIONS = 10;
/** Longest excerpt of the message reacted to that a reaction keeps. */
export const MAX_REACTION_EXCERPT_CHARS = 80;
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

/** One person's reaction to a message in the conversation (a reply of the agent's, mostly). */
export const reactionSchema = z.strictObject({
  /** The reaction event's own update key: a redelivered event is not kept twice. */
  key: z.string().min(1).max(300),
  /** The emoji, or null when the person removed their reaction. */
  emoji: z.string().min(1).max(64).nullable(),
  /** The platform id of the message reacted to. */
  messageId: z.string().min(1).max(200),
  by: z.strictObject({ id: z.string().min(1).max(200), name: z.string().max(500).optional() }),
  atMs: z.number().int().nonnegative(),
  /** The start of the message reacted to, when the adapter still knew its text. */
  excerpt: z.string().min(1).max(MAX_REACTION_EXCERPT_CHARS).optional(),
});
export const reactionsSchema = z.strictObject({ items: z.array(reactionSchema).max(MAX_REACTIONS) });
export type Reaction = z.infer<typeof reactionSchema>;
export type Reactions = z.infer<typeof reactionsSchema>;

/** The slot values as stored, or null when a slot is unset or holds what this build cannot read. */
export function readGoal(state: ConversationState): Goal | null {
  const parsed = goalSchema.safeParse(state.goal?.value);
  return parsed.success ? parsed.data : null;
}

export function readTodo(state: ConversationState): TodoList {
  const parsed = todoSchema.safeParse(state.todo?.value);
  return parsed.success ? parsed.data : { items: [] };
}

export function readReactions(state: ConversationState): Reactions {
  const parsed = reactionsSchema.safeParse(state.reactions?.value);
  return parsed.success ? parsed.data : { items: [] };
}

/**
 * The list with `reaction` added last: it replaces the same person's earlier reaction to the same
 * message (a platform keeps one per person and message), and only the latest MAX_REACTIONS stay.
 * Unchanged (the same object) when the list already holds this reaction event.
 */
export function withReaction(list: Reactions, reaction: Reaction): Reactions {
  if (list.items.some((item) => item.key === reaction.key)) return list;
  const others = list.items.filter(
    (item) => item.by.id !== reaction.by.id || item.messageId !== reaction.messageId,
  );
  return { items: [...others, reaction].slice(-MAX_REACTIONS) };
}

export const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** Longest reactions line in the state block, in characters. */
const MAX_REACTIONS_LINE_CHARS = 600;

/**
 * One line naming the recent reactions, newest first, at most `maxChars`; empty when none, e.g.
 * `Recent reactions to your replies: 👍 from Alice on “Here is the plan…”`.
 */
export function reactionsLine(state: ConversationState, maxChars = MAX_REACTIONS_LINE_CHARS): string {
  const { items } = readReactions(state);
  if (items.length === 0) return "";
  const head = "Recent reactions to your replies:";
  let line = head;
  for (const item of [...items].reverse()) {
    const who = clip(oneLine(item.by.name ?? item.by.id), 40);
    const what = item.emoji === null ? `reaction removed by ${who}` : `${oneLine(item.emoji)} from ${who}`;
    const on = item.excerpt ? ` on “${oneLine(item.excerpt)}”` : "";
    const part = `${line === head ? " " : "; "}${what}${on}`;
    if (line.length + part.length > maxChars) break;
    line += part;
  }
  return line === head ? "" : line;
}

/**
 * The block the system prompt gets: the active goal and the open todos, then the recent reactions,
 * at most `maxChars`; empty when there is none of them. A finished goal and done items stay out:
 * they no longer steer the agent.
 */
export function stateBlock(state: ConversationState, maxChars = MAX_STATE_BLOCK_CHARS): string {
  const reactions = reactionsLine(state, Math.min(MAX_REACTIONS_LINE_CHARS, Math.floor(maxChars / 3)));
  const work = workBlock(state, reactions === "" ? maxChars : maxChars - reactions.length - 1);
  return [work, reactions].filter((part) => part !== "").join("\n");
}

/** The goal and todo part of the state block, at most `maxChars`. */
function workBlock(state: ConversationState, maxChars: number): string {
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
