/** The built-in tool sets (src/gateway/tool-providers.ts): what each declares holds for what it makes. */

import { afterAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ScheduleService } from "../../schedules/service.ts";
import { loadAgentFiles } from "../../src/agent/files.ts";
import type { ChildAgents } from "../../src/children/service.ts";
import { RESERVED_TOOL_NAMES } from "../../src/gateway/agent-tools.ts";
import { BUILT_IN_TOOL_SETS } from "../../src/gateway/config/file.ts";
import { BUILT_IN_TOOL_PROVIDERS, type ToolDeps, type ToolRun } from "../../src/gateway/tool-providers.ts";
import type { StoreBackend } from "../../src/store/backend.ts";
import type { SendFileToolOptions } from "../../src/tools/files/send-file.ts";
import { systemClock } from "../../src/util/clock.ts";
import { tempDir } from "../support/runtime.ts";
import { configWith } from "./support/config.ts";

const dir = tempDir("switchboard-tool-providers-");
afterAll(() => dir.cleanup());

test("every tool set the config accepts has one provider, and every provider a set the config accepts", () => {
  expect(BUILT_IN_TOOL_PROVIDERS.map((p) => p.set).sort()).toEqual([...BUILT_IN_TOOL_SETS].sort());
});

test("no tool name is claimed twice, each is reserved from MCP, and only declared names are idempotent", () => {
  const names = BUILT_IN_TOOL_PROVIDERS.flatMap((p) => p.names);
  expect(new Set(names).size).toBe(names.length);
  for (const name of [...names, "read_output", "tool_search"])
    expect(RESERVED_TOOL_NAMES.has(name)).toBe(true);
  for (const provider of BUILT_IN_TOOL_PROVIDERS)
    for (const name of provider.idempotent) expect(provider.names).toContain(name);
});

test("with everything configured, each provider makes exactly the tools it names", () => {
  const root = join(dir.path, "agent");
  mkdirSync(join(root, "skills", "triage"), { recursive: true });
  mkdirSync(join(root, "resources"), { recursive: true });
  writeFileSync(
    join(root, "skills", "triage", "SKILL.md"),
    "---\nname: triage\ndescription: Sort\n---\nBody",
  );
  writeFileSync(join(root, "resources", "faq.md"), "Questions");
  const config = configWith({ SWITCHBOARD_SEARXNG_URL: "http://127.0.0.1:8888" });
  // The providers only capture the stores and the service; nothing here calls a tool.
  const deps: ToolDeps = {
    config,
    stores: {} as StoreBackend,
    clock: systemClock,
    schedules: {} as ScheduleService,
    children: {} as ChildAgents,
  };
  const run: ToolRun = {
    conversationId: "c1",
    runId: "r1",
    fencingToken: 1,
    context: {
      channel: "telegram",
      account: "bot",
      target: "t1",
      surface: "dm",
      delivery: "terminal",
      conversationKey: "telegram:bot:1",
      principal: { id: "U1" },
      origin: "user",
    },
    fence: async () => {},
    agentFiles: loadAgentFiles(root),
    outgoing: {} as SendFileToolOptions,
  };
  for (const provider of BUILT_IN_TOOL_PROVIDERS)
    expect({ [provider.set]: Object.keys(provider.create(run, deps)).sort() }).toEqual({
      [provider.set]: [...provider.names].sort(),
    });
});
