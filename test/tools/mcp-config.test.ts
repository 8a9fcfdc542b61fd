// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are the literal ${VAR} syntax of the config
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, redactSecrets } from "../../src/gateway/config/index.ts";
import { tempDir } from "../support/runtime.ts";

const dir = tempDir("switchboard-mcp-config-");
afterAll(() => dir.cleanup());

function load(mcpServers: unknown, env: Record<string, string> = {}) {
  const file = join(dir.path, "switchboard.json");
  writeFileSync(file, JSON.stringify({ version: 1, mcpServers }));
  return loadConfig({ SWITCHBOARD_CONFIG: file, SWITCHBOARD_DB: join(dir.path, "db.sqlite"), ...env });
}

test("mcpServers takes the Claude Desktop shape and fills our defaults", () => {
  const config = load(
    {
      notes: { command: "bun", args: ["notes.ts"], env: { NOTES_DIR: "/srv" } },
      linear: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${LINEAR_TOKEN}" } },
    },
    { LINEAR_TOKEN: "lin-secret-123" },
  );
  expect(config.file.mcpServers.notes).toEqual({
    command: "bun",
    args: ["notes.ts"],
    env: { NOTES_DIR: "/srv" },
    approval: "ask",
    tools: { deny: [] },
    timeoutMs: 60_000,
    startTimeoutMs: 15_000,
    idempotent: [],
  });
  expect(config.mcpEnv).toEqual({ LINEAR_TOKEN: "lin-secret-123" });
  expect(redactSecrets("token lin-secret-123", {})).toBeDefined();
  expect(config.secrets).toContain("lin-secret-123");
});

test("a server with neither or both of command and url, or a bad name, is refused with a clear message", () => {
  expect(() => load({ x: { args: [] } })).toThrow(/either "command" \(stdio\) or "url"/);
  expect(() => load({ x: { command: "a", url: "https://h/mcp" } })).toThrow(/either "command"/);
  expect(() => load({ "bad name": { command: "a" } })).toThrow(
    /"bad name" may use only letters, digits, _ and -/,
  );
  expect(() => load({ x: { command: "a", approval: "sometimes" } })).toThrow(/approval/);
});
