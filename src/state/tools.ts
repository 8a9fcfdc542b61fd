/**
 * goal_set, goal_get and todo_write: the agent's hands on its conversation's state slots. Each is
 * bound to one conversation; a change is fenced (the run must still own itself) and saved with the
 * actor `agent` and the run's id. A stale `expectedVersion` is refused with the current value, so
 * the agent never overwrites a human's change it has not seen.
 */
import { type ToolSet, tool, zodSchema } from "ai";
import { z } from "zod";
import {
  goalSchema,
  MAX_GOAL_CHARS,
  MAX_TODO_CHARS,
  MAX_TODO_ITEMS,
  readGoal,
  readTodo,
  todoItemSchema,
} from "./slots.ts";
import type { StateSaveResult, StateSlotName, StateStore } from "./store.ts";

export const STATE_TOOL_NAMES = ["goal_set", "goal_get", "todo_write"] as const;

export interface StateToolsOptions {
  store: StateStore;
  conversationId: string;
  runId: string;
  /** Throws when the calling run lost ownership; called before every write. */
  fence: () => Promise<void>;
  now: () => number;
}

const expectedVersion = z
  .number()
  .int()
  .nonnegative()
  .optional()
  .describe(
    "The version you last read (goal_get or your last result; 0 if unset); refused if changed since.",
  );

const goalSetInput = zodSchema(
  z.object({
    text: z
      .string()
      .max(MAX_GOAL_CHARS)
      .optional()
      .describe(
        "The goal in one or two sentences. Omit it to keep the current text and change only the status.",
      ),
    status: z
      .enum(["active", "done"])
      .optional()
      .describe(
        "'done' once the goal is reached; 'active' (the default with a new text) while working on it.",
      ),
    expectedVersion,
  }),
);
const goalGetInput = zodSchema(z.object({}));
const todoWriteInput = zodSchema(
  z.object({
    items: z
      .array(
        z.object({
          text: z.string().max(MAX_TODO_CHARS).describe("One concrete step."),
          status: z.enum(["pending", "in_progress", "done"]),
        }),
      )
      .max(MAX_TODO_ITEMS)
      .describe("The whole list, in order."),
    expectedVersion,
  }),
);

export function createStateTools(options: StateToolsOptions): ToolSet {
  const { store, conversationId } = options;

  const save = async (slot: StateSlotName, value: unknown, expected: number | undefined) => {
    await options.fence();
    const result: StateSaveResult = await store.saveState({
      conversationId,
      slot,
      value,
      actor: "agent",
      runId: options.runId,
      nowMs: options.now(),
      ...(expected === undefined ? {} : { expectedVersion: expected }),
    });
    if (result.outcome === "saved") return { ok: true as const, version: result.version };
    const actual = result.actual;
    return {
      ok: false as const,
      error: `The ${slot} changed since version ${expected}: it is now version ${actual?.version ?? 0}${actual ? `, changed by ${actual.actor}` : ""}.`,
      current: actual?.value ?? null,
      version: actual?.version ?? 0,
      hint: "Take the current value into account, then try again with expectedVersion set to the version above.",
    };
  };

  return {
    goal_get: tool({
      description:
        "Read this conversation's goal (what the user wants achieved) and todo list, with their versions.",
      inputSchema: goalGetInput,
      execute: async () => {
        const state = await store.loadState(conversationId);
        return {
          goal: readGoal(state),
          goalVersion: state.goal?.version ?? 0,
          todos: readTodo(state).items,
          todoVersion: state.todo?.version ?? 0,
        };
      },
    }),
    goal_set: tool({
      description:
        "Set this conversation's goal when the user states what they want achieved over several turns, or mark it done.",
      inputSchema: goalSetInput,
      execute: async ({ text, status, expectedVersion: expected }) => {
        let goal = { text: text?.trim() ?? "", status: status ?? "active" };
        if (!goal.text) {
          const current = readGoal(await store.loadState(conversationId));
          if (!current) return { ok: false, error: "There is no goal yet.", hint: "Give the goal's text." };
          goal = { text: current.text, status: status ?? current.status };
        }
        const value = goalSchema.safeParse(goal);
        if (!value.success) return { ok: false, error: value.error.issues[0]?.message ?? "invalid goal" };
        return save("goal", value.data, expected);
      },
    }),
    todo_write: tool({
      description:
        "Replace this conversation's todo list: the steps toward the goal, each pending, in_progress or done. Send the whole list.",
      inputSchema: todoWriteInput,
      execute: async ({ items, expectedVersion: expected }) => {
        const parsed = z.array(todoItemSchema).safeParse(items);
        if (!parsed.success) {
          return {
            ok: false,
            error: `Invalid item: ${parsed.error.issues[0]?.message ?? "invalid"}`,
            hint: "Each item needs a non-empty text.",
          };
        }
        return save("todo", { items: parsed.data }, expected);
      },
    }),
  };
}
