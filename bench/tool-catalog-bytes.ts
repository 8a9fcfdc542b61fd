/**
 * Prompt bytes for a 200-tool catalog (test/fixtures/mcp/catalog-server.ts over stdio), with and
 * without tool_search: the request body the OpenAI-compatible provider sends (measured at the fake
 * model server), for the first step, and for the step after a search selected 8 tools.
 *   npx bun bench/tool-catalog-bytes.ts
 */
import { join } from "node:path";
import { createModelRegistry } from "../src/models/registry.ts";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { mcpServersSchema } from "../src/tools/mcp/config.ts";
import { McpTools } from "../src/tools/mcp/tools.ts";
import { silentLogger } from "../src/util/log.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";

const SERVER = join(import.meta.dir, "..", "test", "fixtures", "mcp", "catalog-server.ts");
const dir = tempDir("switchboard-bench-catalog-");
const llm = startFakeLlmServer();
const mcp = new McpTools({
  servers: mcpServersSchema.parse({
    catalog: { command: process.execPath, args: [SERVER], approval: "never" },
  }),
  env: {},
  logger: silentLogger,
});
await mcp.start();
const registry = createModelRegistry({
  SWITCHBOARD_MODEL: "openai-compatible:bench",
  OPENAI_COMPATIBLE_BASE_URL: `${llm.url}/v1`,
});

/** The request bodies of one turn that searches (when offered), then answers. */
async function turnBodies(
  budgetBytes: number,
): Promise<Array<{ body: number; tools: number; count: number }>> {
  const stores = openSqliteStores(join(dir.path, `catalog-${budgetBytes}.sqlite`));
  const runtime = new Runtime({
    store: stores.runtime,
    models: registry.chain,
    readUsage: toUsage,
    tools: () => mcp.toolSet().tools,
    toolCatalog: { budgetBytes },
  });
  llm.reset();
  llm.setRules([
    {
      match: { lastRole: "user" },
      reply: { kind: "tool-call", toolName: "tool_search", input: { query: "create tickets" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "done" } },
  ]);
  await runtime.submit({
    conversationId: "bench",
    idempotencyKey: "k",
    parts: [{ type: "text", text: "open a ticket" }],
  }).result;
  await runtime.close({ gracePeriodMs: 0 });
  stores.close();
  return llm.requests().map((r) => ({
    body: Buffer.byteLength(JSON.stringify(r.body)),
    tools: Buffer.byteLength(JSON.stringify(r.body.tools ?? [])),
    count: r.toolNames.length,
  }));
}

const [deferredFirst, deferredNext] = await turnBodies(24 * 1024);
const [allFirst] = await turnBodies(100_000_000);
await mcp.stop();
await llm.stop();
dir.cleanup();

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`.padStart(9);
console.log("\nprompt bytes, 200-tool MCP catalog (+ big_output and read_output), first request of a turn");
console.log("                                            tools   tool schemas   request body");
const row = (label: string, r: { body: number; tools: number; count: number }) =>
  console.log(`  ${label.padEnd(40)} ${String(r.count).padStart(5)}   ${kb(r.tools)}      ${kb(r.body)}`);
row("every schema (no tool_search)", allFirst!);
row("tool_search (default 24 KB budget)", deferredFirst!);
row("  next step, 8 tools selected", deferredNext!);
console.log(
  `  ratio (tool_search / every schema)       body ${(deferredFirst!.body / allFirst!.body).toFixed(3)}`,
);
