/**
 * The chat commands on state slots: `/goal` shows the goal, `/goal <text>` sets it, `/goal done`
 * marks it reached, `/todo` shows the list. Changes are saved with the actor `human:<id>`.
 */
import { describeGoal, describeTodo, goalSchema, MAX_GOAL_CHARS, readGoal } from "./slots.ts";
import type { StateStore } from "./store.ts";

export const STATE_COMMANDS = ["goal", "todo"] as const;
export type StateCommand = (typeof STATE_COMMANDS)[number];

export interface StateCommandScope {
  store: StateStore;
  conversationId: string;
  /** The principal's id on its platform. */
  userId: string;
  nowMs: number;
}

/** The text after the command word (and an optional @bot suffix), trimmed. */
function argumentOf(text: string): string {
  return text
    .trim()
    .replace(/^\/[a-z]+(?:@\S+)?/i, "")
    .trim();
}

export async function runStateCommand(
  name: StateCommand,
  text: string,
  scope: StateCommandScope,
): Promise<string> {
  const { store, conversationId } = scope;
  const actor = `human:${scope.userId}` as const;
  const state = await store.loadState(conversationId);
  if (name === "todo") return describeTodo(state);
  const arg = argumentOf(text);
  if (arg === "") return describeGoal(state);
  if (arg.toLowerCase() === "done") {
    const goal = readGoal(state);
    if (!goal) return "No goal set. Set one with /goal <text>.";
    if (goal.status === "done") return `The goal is already done: ${goal.text}`;
    const saved = await store.saveState({
      conversationId,
      slot: "goal",
      value: { ...goal, status: "done" },
      actor,
      expectedVersion: state.goal!.version,
      nowMs: scope.nowMs,
    });
    return saved.outcome === "saved"
      ? `Goal done: ${goal.text}`
      : "The goal changed just now (the agent may have updated it). Check it with /goal, then try again.";
  }
  const value = goalSchema.safeParse({ text: arg, status: "active" });
  if (!value.success) {
    return `A goal is at most ${MAX_GOAL_CHARS} characters (yours has ${arg.length}). Shorten it and send /goal <text> again.`;
  }
  await store.saveState({ conversationId, slot: "goal", value: value.data, actor, nowMs: scope.nowMs });
  return `Goal set: ${value.data.text}\nI'll work toward it; /goal shows it, /goal done marks it reached.`;
}
