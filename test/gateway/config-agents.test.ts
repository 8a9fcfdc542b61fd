import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSwitchboardError } from "../../src/errors.ts";
import { agentDirsOf, loadConfig } from "../../src/gateway/config/index.ts";
import { tempDir } from "../support/runtime.ts";
import { configWith } from "./support/config.ts";

function refusal(fileJson: unknown): string {
  try {
    configWith({}, fileJson);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error.message;
    throw error;
  }
  throw new Error("expected config_invalid");
}

test("agents: entries and limits are read, with the limits' defaults", () => {
  const config = configWith(
    {},
    {
      version: 1,
      models: { fast: "offline" },
      agents: { researcher: { model: "fast", tools: ["web"], maxSteps: 20, description: "reads the web" } },
    },
  );
  expect(config.file.agents.researcher).toMatchObject({ model: "fast", tools: ["web"], maxSteps: 20 });
  expect(config.file.agentLimits).toEqual({ maxDepth: 2, maxRunningPerConversation: 4 });
  expect(configWith({}, { version: 1 }).file.agents).toEqual({});
  expect(
    configWith({}, { version: 1, agentLimits: { maxDepth: 1, maxRunningPerConversation: 2 } }).file
      .agentLimits,
  ).toEqual({ maxDepth: 1, maxRunningPerConversation: 2 });
});

test("agents: each mistake is refused naming its key", () => {
  expect(refusal({ version: 1, agents: { researcher: { tools: ["webb"] } } })).toContain(
    'agents.researcher.tools.0: "webb" is not a tool set',
  );
  expect(refusal({ version: 1, agents: { researcher: { model: "smart" } } })).toContain(
    'agents.researcher.model: "smart" is not defined: add it to "models"',
  );
  expect(refusal({ version: 1, models: { fast: "offline" }, agents: { r: { model: "smart" } } })).toContain(
    'agents.r.model: "smart" is not a name in "models" (fast)',
  );
  expect(refusal({ version: 1, agents: { self: {} } })).toContain('"self" is reserved');
  expect(refusal({ version: 1, agents: { "Research Bot": {} } })).toContain(
    '"Research Bot" is not an agent name',
  );
  expect(refusal({ version: 1, agents: { r: { maxSteps: 0 } } })).toContain("agents.r.maxSteps");
  expect(refusal({ version: 1, agents: { r: { budget: 3 } } })).toContain("agents.r");
  expect(refusal({ version: 1, agentLimits: { maxDepth: 9 } })).toContain("agentLimits.maxDepth");
});

test("agents: an agentDir is relative to the config file, must exist, and joins the watched directories", () => {
  const dir = tempDir("switchboard-agents-config-");
  try {
    mkdirSync(join(dir.path, "agents", "researcher"), { recursive: true });
    const path = join(dir.path, "switchboard.json");
    writeFileSync(
      path,
      JSON.stringify({ version: 1, agents: { researcher: { agentDir: "agents/researcher" } } }),
    );
    const config = loadConfig({ SWITCHBOARD_CONFIG: path });
    expect(config.file.agents.researcher?.agentDir).toBe(join(dir.path, "agents", "researcher"));
    expect(agentDirsOf(config)).toContain(join(dir.path, "agents", "researcher"));
    writeFileSync(
      path,
      JSON.stringify({ version: 1, agents: { researcher: { agentDir: "agents/missing" } } }),
    );
    expect(() => loadConfig({ SWITCHBOARD_CONFIG: path })).toThrow(
      /gives agents\.researcher the agentDir .*agents\/missing, which is not a directory/,
    );
  } finally {
    dir.cleanup();
  }
});
