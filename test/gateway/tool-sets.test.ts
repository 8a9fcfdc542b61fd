import { expect, test } from "bun:test";
import { tool } from "ai";
import { z } from "zod";
import { pickToolSets } from "../../src/gateway/tool-sets.ts";

const named = (name: string) => ({ [name]: tool({ description: name, inputSchema: z.object({}) }) });
const sets = new Map([
  ["notes", { ...named("notes_append_note"), ...named("notes_read_notes") }],
  ["web", named("web_fetch")],
  ["schedules", named("schedule_list")],
]);

test("no list: every set is offered", () => {
  expect(Object.keys(pickToolSets(sets, undefined)).sort()).toEqual([
    "notes_append_note",
    "notes_read_notes",
    "schedule_list",
    "web_fetch",
  ]);
});

test("a list offers exactly the sets it names; an empty list offers none", () => {
  expect(Object.keys(pickToolSets(sets, ["web", "notes"])).sort()).toEqual([
    "notes_append_note",
    "notes_read_notes",
    "web_fetch",
  ]);
  expect(pickToolSets(sets, [])).toEqual({});
});
