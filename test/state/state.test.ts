import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { ToolSet } from "ai";
import { runStateCommand } from "../../src/state/commands.ts";
import {
  MAX_REACTIONS,
  MAX_STATE_BLOCK_CHARS,
  type Reaction,
  reactionSchema,
  reactionsLine,
  reactionsSchema,
  stateBlock,
  withReaction,
} from "../../src/state/slots.ts";
import type { ConversationState } from "../../src/state/store.ts";
import { createStateTools } from "../../src/state/tools.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { tempDir } from "../support/runtime.ts";

let dir: { path: string; cleanup: () => void };
let stores: SqliteStores;
let fenced = 0;
let fenceHolds = true;
beforeEach(() => {
  dir = tempDir("switchboard-state-");
  stores = openSqliteStores(join(dir.path, "s.sqlite"));
  fenced = 0;
  fenceHolds = true;
});
afterEach(() => {
  stores.close();
  dir.cleanup();
});

const tools = (): ToolSet =>
  createStateTools({
    store: stores.runtime,
    conversationId: "c",
    runId: "run_1",
    fence: async () => {
      fenced += 1;
      if (!fenceHolds) throw Object.assign(new Error("fence lost"), { code: "fence_lost" });
    },
    now: () => 1000,
  });

async function call(name: string, input: unknown): Promise<Record<string, unknown>> {
  const execute = tools()[name]!.execute as (i: unknown, o: unknown) => Promise<Record<string, unknown>>;
  return execute(input, { toolCallId: "t", messages: [] });
}
const human = (text: string, userId = "alice") =>
  runStateCommand(text.startsWith("/todo") ? "todo" : "goal", text, {
    store: stores.runtime,
    conversationId: "c",
    userId,
    nowMs: 2000,
  });

describe("tools and commands", () => {
  test("agent and human changes interleave; each is versioned with its actor", async () => {
    expect(await human("/goal")).toContain("No goal set");
    expect(await human("/goal Ship the 2.0 release")).toContain("Goal set: Ship the 2.0 release");
    expect(await call("goal_get", {})).toMatchObject({
      goal: { text: "Ship the 2.0 release", status: "active" },
      goalVersion: 1,
      todoVersion: 0,
    });
    expect(
      await call("todo_write", {
        items: [
          { text: "Freeze the branch", status: "done" },
          { text: "Write the notes", status: "in_progress" },
          { text: "Tag the release", status: "pending" },
        ],
        expectedVersion: 0,
      }),
    ).toEqual({ ok: true, version: 1 });
    expect(await call("goal_set", { status: "done", expectedVersion: 1 })).toEqual({ ok: true, version: 2 });
    expect(await human("/goal")).toContain("Goal (done): Ship the 2.0 release");
    expect(await human("/goal done")).toContain("already done");
    expect(await human("/goal@switchboard_bot Ship 2.1 as well", "bob")).toContain(
      "Goal set: Ship 2.1 as well",
    );
    const todo = await human("/todo");
    expect(todo).toContain("Todos: 2 open of 3");
    expect(todo).toContain("◐ 2. Write the notes");
    const state = await stores.runtime.loadState("c");
    expect(state.goal).toMatchObject({ version: 3, actor: "human:bob" });
    const events = await stores.runtime.readEvents("c", 0, 20);
    expect(
      events.map((e) => (e.type === "state" ? `${e.slot}:${e.version}:${e.actor}:${e.runId}` : e.type)),
    ).toEqual(["goal:1:human:alice:", "todo:1:agent:run_1", "goal:2:agent:run_1", "goal:3:human:bob:"]);
    expect(fenced).toBe(2);
  });

  test("the agent's change on a stale version is refused with the human's current value", async () => {
    await call("goal_set", { text: "Plan the trip", expectedVersion: 0 });
    await human("/goal Plan the trip to Lisbon, not Porto");
    const stale = await call("goal_set", { text: "Plan the trip to Porto", expectedVersion: 1 });
    expect(stale).toMatchObject({
      ok: false,
      version: 2,
      current: { text: "Plan the trip to Lisbon, not Porto" },
    });
    expect(String(stale.error)).toContain("changed by human:alice");
    expect((await stores.runtime.loadState("c")).goal?.value).toMatchObject({
      text: "Plan the trip to Lisbon, not Porto",
    });
  });

  test("bad input changes nothing: an overlong goal, a goal_set without text and no goal, a lost fence", async () => {
    expect(await human(`/goal ${"x".repeat(501)}`)).toContain("at most 500 characters");
    expect(await call("goal_set", { status: "done" })).toMatchObject({
      ok: false,
      error: "There is no goal yet.",
    });
    expect(await call("todo_write", { items: [{ text: "  ", status: "pending" }] })).toMatchObject({
      ok: false,
    });
    fenceHolds = false;
    await expect(call("goal_set", { text: "late" })).rejects.toThrow("fence lost");
    expect(await stores.runtime.loadState("c")).toEqual({});
    expect(await stores.runtime.readEvents("c", 0, 10)).toEqual([]);
  });
});

describe("the prompt block", () => {
  const state = (goal: string, todos: Array<{ text: string; status: string }>): ConversationState => ({
    goal: {
      slot: "goal",
      value: { text: goal, status: "active" },
      version: 1,
      actor: "agent",
      updatedAtMs: 0,
    },
    todo: { slot: "todo", value: { items: todos }, version: 1, actor: "agent", updatedAtMs: 0 },
  });

  test("the active goal and open todos only; empty when there is nothing open", () => {
    const block = stateBlock(
      state("Ship it", [
        { text: "done one", status: "done" },
        { text: "doing one", status: "in_progress" },
        { text: "next one", status: "pending" },
      ]),
    );
    expect(block).toContain("Goal: Ship it");
    expect(block).toContain("- [in progress] doing one");
    expect(block).toContain("- [pending] next one");
    expect(block).not.toContain("done one");
    expect(stateBlock({})).toBe("");
    const finished = state("Ship it", [{ text: "x", status: "done" }]);
    (finished.goal!.value as { status: string }).status = "done";
    expect(stateBlock(finished)).toBe("");
  });

  test("stays within its bound with the largest state the slots accept", () => {
    const items = Array.from({ length: 30 }, (_, i) => ({
      text: `${i} ${"t".repeat(196)}`,
      status: "pending",
    }));
    const block = stateBlock(state("g".repeat(500), items));
    expect(block.length).toBeLessThanOrEqual(MAX_STATE_BLOCK_CHARS);
    expect(block).toMatch(/… and \d+ more$/);
    expect(stateBlock(state("g".repeat(500), items), 600).length).toBeLessThanOrEqual(600);
  });

  test("a value this build cannot read is left out rather than failing the prompt", () => {
    const odd: ConversationState = {
      goal: { slot: "goal", value: { objective: 1 }, version: 1, actor: "agent", updatedAtMs: 0 },
    };
    expect(stateBlock(odd)).toBe("");
  });
});

describe("the reactions slot", () => {
  const reaction = (key: string, fields: Partial<Reaction> = {}): Reaction => ({
    key,
    emoji: "👍",
    messageId: `wamid.${key}`,
    by: { id: "15551230001", name: "Alice" },
    atMs: 1_700_000_000_000,
    ...fields,
  });
  const holding = (items: Reaction[]): ConversationState => ({
    reactions: {
      slot: "reactions",
      value: { items },
      version: 1,
      actor: "human:15551230001",
      updatedAtMs: 0,
    },
  });

  test("the schema takes an emoji or a removal, and refuses a long excerpt, an empty emoji and an 11th reaction", () => {
    expect(reactionSchema.safeParse(reaction("r1", { excerpt: "Here is the plan" })).success).toBe(true);
    expect(reactionSchema.safeParse(reaction("r1", { emoji: null })).success).toBe(true);
    expect(reactionSchema.safeParse(reaction("r1", { excerpt: "x".repeat(81) })).success).toBe(false);
    expect(reactionSchema.safeParse(reaction("r1", { emoji: "" })).success).toBe(false);
    expect(reactionSchema.safeParse({ ...reaction("r1"), note: "extra" }).success).toBe(false);
    const eleven = Array.from({ length: MAX_REACTIONS + 1 }, (_, i) => reaction(`r${i}`));
    expect(reactionsSchema.safeParse({ items: eleven }).success).toBe(false);
  });

  test("a new reaction replaces the person's earlier one to that message; the last ten stay; a repeat changes nothing", () => {
    let list = { items: [] as Reaction[] };
    for (let i = 0; i < 12; i++) list = withReaction(list, reaction(`r${i}`));
    expect(list.items.map((r) => r.key)).toEqual([
      "r2",
      "r3",
      "r4",
      "r5",
      "r6",
      "r7",
      "r8",
      "r9",
      "r10",
      "r11",
    ]);
    expect(withReaction(list, reaction("r5"))).toBe(list);
    const changed = withReaction(list, reaction("r12", { messageId: "wamid.r3", emoji: null }));
    expect(changed.items.map((r) => r.key)).toEqual([
      "r2",
      "r4",
      "r5",
      "r6",
      "r7",
      "r8",
      "r9",
      "r10",
      "r11",
      "r12",
    ]);
    const bob = withReaction(changed, reaction("r13", { messageId: "wamid.r4", by: { id: "15551230002" } }));
    expect(bob.items.filter((r) => r.messageId === "wamid.r4")).toHaveLength(2);
  });

  test("the prompt block names them, newest first, with who and what they reacted to, within its bound", () => {
    const state = holding([
      reaction("r1", { excerpt: "Here is the\nplan" }),
      reaction("r2", { emoji: "❤️", by: { id: "15551230002" } }),
      reaction("r3", { emoji: null, by: { id: "15551230003", name: "Carol" }, excerpt: "Booked" }),
    ]);
    expect(stateBlock(state)).toBe(
      "Recent reactions to your replies: reaction removed by Carol on “Booked”; ❤️ from 15551230002; 👍 from Alice on “Here is the plan”",
    );
    const full = holding(
      Array.from({ length: MAX_REACTIONS }, (_, i) =>
        reaction(`r${i}`, { by: { id: `1555${i}`, name: "N".repeat(500) }, excerpt: "e".repeat(80) }),
      ),
    );
    expect(reactionsLine(full).length).toBeLessThanOrEqual(600);
    expect(reactionsLine(full)).toContain(`on “${"e".repeat(80)}”`);
    expect(stateBlock(full, 300).length).toBeLessThanOrEqual(300);
  });

  test("with goal and todos at their largest, the reactions still show and the whole block keeps its bound", () => {
    const items = Array.from({ length: 30 }, (_, i) => ({
      text: `${i} ${"t".repeat(196)}`,
      status: "pending",
    }));
    const state: ConversationState = {
      goal: {
        slot: "goal",
        value: { text: "g".repeat(500), status: "active" },
        version: 1,
        actor: "agent",
        updatedAtMs: 0,
      },
      todo: { slot: "todo", value: { items }, version: 1, actor: "agent", updatedAtMs: 0 },
      ...holding([reaction("r1", { excerpt: "Here is the plan" })]),
    };
    const block = stateBlock(state);
    expect(block.length).toBeLessThanOrEqual(MAX_STATE_BLOCK_CHARS);
    expect(block).toContain("Goal: ");
    expect(block.split("\n").at(-1)).toBe(
      "Recent reactions to your replies: 👍 from Alice on “Here is the plan”",
    );
    expect(stateBlock(holding([{ ...reaction("r1"), emoji: "" } as Reaction]))).toBe("");
  });
});
