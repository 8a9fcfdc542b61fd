// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are the literal ${VAR} syntax of the config
import { expect, test } from "bun:test";
import {
  assignNames,
  expandVariables,
  exposedToolName,
  restartDelayMs,
  toolAllowed,
} from "../../src/tools/mcp/names.ts";

test("exposed names are <server>_<tool>, sanitised to [a-zA-Z0-9_-] and cut to 64 characters", () => {
  expect(exposedToolName("notes", "append_note")).toBe("notes_append_note");
  expect(exposedToolName("gh", "issues.list/all v2")).toBe("gh_issues_list_all_v2");
  const long = exposedToolName("server", "x".repeat(100));
  expect(long).toHaveLength(64);
  expect(long).toMatch(/^[a-zA-Z0-9_-]+$/);
});

test("two tools that end up with one name are refused with a message naming both and the fix", () => {
  const result = assignNames([
    { server: "a_b", tool: "c" },
    { server: "a", tool: "b_c" },
  ]);
  expect(result.ok).toBe(false);
  if (!result.ok) {
    expect(result.error).toContain('"c" (server "a_b")');
    expect(result.error).toContain('"b_c" (server "a")');
    expect(result.error).toContain("a_b_c");
    expect(result.error).toContain("deny");
  }
  const truncated = assignNames([
    { server: "s", tool: `${"y".repeat(70)}1` },
    { server: "s", tool: `${"y".repeat(70)}2` },
  ]);
  expect(truncated.ok).toBe(false);
  const reserved = assignNames([{ server: "schedule", tool: "list" }], new Set(["schedule_list"]));
  expect(reserved.ok).toBe(false);
  const fine = assignNames([
    { server: "notes", tool: "append" },
    { server: "web", tool: "append" },
  ]);
  expect(fine).toEqual({
    ok: true,
    tools: [
      { server: "notes", tool: "append", name: "notes_append" },
      { server: "web", tool: "append", name: "web_append" },
    ],
  });
});

test("the allow list narrows, the deny list wins", () => {
  expect(toolAllowed("a", { deny: [] })).toBe(true);
  expect(toolAllowed("a", { allow: ["b"], deny: [] })).toBe(false);
  expect(toolAllowed("b", { allow: ["b"], deny: ["b"] })).toBe(false);
  expect(toolAllowed("b", { allow: ["b"], deny: ["c"] })).toBe(true);
});

test("${VAR} expands from the environment; an unset one is named, not guessed", () => {
  expect(expandVariables("Bearer ${TOKEN}", { TOKEN: "s3cret" })).toEqual({
    ok: true,
    value: "Bearer s3cret",
  });
  expect(expandVariables("plain $TOKEN", {})).toEqual({ ok: true, value: "plain $TOKEN" });
  expect(expandVariables("${A}-${B}", { A: "1" })).toEqual({ ok: false, missing: "B" });
  expect(expandVariables("${A}", { A: "" })).toEqual({ ok: false, missing: "A" });
});

test("restarts back off from 1 s, doubling, to at most 30 s", () => {
  expect([0, 1, 2, 3, 4, 5, 9].map(restartDelayMs)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
});
