import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadAgentFiles } from "../../src/agent/files.ts";
import { isSwitchboardError } from "../../src/errors.ts";
import { agentDirsOf, surfacePolicy } from "../../src/gateway/config/index.ts";
import { instructionsFor } from "../../src/gateway/instructions.ts";
import type { RunContext } from "../../src/run-context.ts";
import { configWith } from "../gateway/support/config.ts";
import { tempDir } from "../support/runtime.ts";

let dir: { path: string; cleanup: () => void };
beforeEach(() => {
  dir = tempDir("switchboard-agent-config-");
});
afterEach(() => dir.cleanup());

const context: RunContext = {
  channel: "slack",
  account: "A1",
  target: "C1",
  surface: "group",
  delivery: "terminal",
  conversationKey: "slack:A1:C1",
  principal: { id: "U1" },
  origin: "user",
};

function agentDir(name: string, instructions: string): string {
  const root = join(dir.path, name);
  mkdirSync(join(root, "skills", "triage"), { recursive: true });
  writeFileSync(join(root, "INSTRUCTIONS.md"), instructions);
  writeFileSync(
    join(root, "skills", "triage", "SKILL.md"),
    "---\nname: triage\ndescription: Sort tickets\n---\nBody",
  );
  return root;
}

test("SWITCHBOARD_AGENT_DIR defaults to ./agent; named explicitly it must be a directory", () => {
  expect(configWith({}).agentDir).toBe(resolve("./agent"));
  try {
    configWith({ SWITCHBOARD_AGENT_DIR: join(dir.path, "missing") });
    throw new Error("expected a refusal");
  } catch (error) {
    expect(isSwitchboardError(error, "config_invalid")).toBe(true);
    expect((error as Error).message).toContain("SWITCHBOARD_AGENT_DIR points at");
  }
});

test("a surface's agentDir must exist and is made absolute; agentDirsOf lists each directory once", () => {
  const main = agentDir("main", "Main persona");
  const support = agentDir("support", "Support persona");
  const config = configWith(
    { SWITCHBOARD_AGENT_DIR: main },
    { version: 1, surfaces: { "slack:group": { agentDir: support }, "slack:thread": { agentDir: support } } },
  );
  expect(surfacePolicy(config.file, "slack", "group").agentDir).toBe(support);
  expect(surfacePolicy(config.file, "telegram", "dm").agentDir).toBeUndefined();
  expect(agentDirsOf(config)).toEqual([main, support]);
  expect(() =>
    configWith({}, { version: 1, surfaces: { "slack:group": { agentDir: join(dir.path, "nope") } } }),
  ).toThrow("agentDir");
});

test("INSTRUCTIONS.md replaces the default instructions; SWITCHBOARD_INSTRUCTIONS and the config file win over it", () => {
  const root = agentDir("main", "From the agent directory");
  const files = loadAgentFiles(root);
  const byDefault = instructionsFor(configWith({ SWITCHBOARD_AGENT_DIR: root }), context, 0, files);
  expect(byDefault.startsWith("From the agent directory")).toBe(true);
  expect(byDefault).toContain("- triage: Sort tickets");
  const byEnv = instructionsFor(
    configWith({ SWITCHBOARD_AGENT_DIR: root, SWITCHBOARD_INSTRUCTIONS: "From the environment" }),
    context,
    0,
    files,
  );
  expect(byEnv.startsWith("From the environment")).toBe(true);
  expect(byEnv).not.toContain("From the agent directory");
  // The skills summary is there whichever instructions win.
  expect(byEnv).toContain("- triage: Sort tickets");
  const byFile = instructionsFor(
    configWith({ SWITCHBOARD_AGENT_DIR: root }, { version: 1, instructions: "From the config file" }),
    context,
    0,
    files,
  );
  expect(byFile.startsWith("From the config file")).toBe(true);
});

test("the system prompt's time is to the minute, so steps and messages within a minute share it byte for byte", () => {
  const config = configWith({ SWITCHBOARD_TIMEZONE: "Europe/Berlin" });
  const at = Date.parse("2026-12-02T17:27:05.120Z");
  const early = instructionsFor(config, context, at, undefined);
  expect(instructionsFor(config, context, at + 54_000, undefined)).toBe(early);
  expect(early).toContain(
    "Current time: Wednesday, 2 December 2026 at 18:27 (Europe/Berlin; 2026-12-02T17:27Z).",
  );
  const next = instructionsFor(config, context, at + 55_000, undefined);
  expect(next).not.toBe(early);
  expect(next).toContain("at 18:28 (Europe/Berlin; 2026-12-02T17:28Z)");
});
