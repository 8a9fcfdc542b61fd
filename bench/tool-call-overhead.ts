/**
 * Tool-call overhead: one step whose model asks for a local MCP tool (stdio, the notes server of
 * test/fixtures/mcp), run through switchboard's runtime on SQLite, against the same MCP call made
 * directly with the official SDK client from this script, alternating, in the same run.
 *   npx bun bench/tool-call-overhead.ts [--calls 300]
 *
 * "Through switchboard" is the time from the model's tool call (the end of its step) to the next
 * model request: the step's checkpoint, the fenced "started" save, the MCP call, the fenced result
 * save and the next prompt's load and build. "Added" is that minus the direct call, per pair.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type LanguageModelV4, unavailableUsage } from "../src/models/language-model-v4.ts";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { mcpServersSchema } from "../src/tools/mcp/config.ts";
import { McpTools } from "../src/tools/mcp/tools.ts";
import { silentLogger } from "../src/util/log.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const calls = argInt("--calls", 300);
const SERVER = join(import.meta.dir, "..", "test", "fixtures", "mcp", "stdio-server.ts");
const dir = tempDir("switchboard-bench-tools-");
const notesFile = join(dir.path, "notes.txt");

/** Asks for notes_read_notes, then answers "ok" once the result is in; notes when each happens. */
function toolCallingModel(marks: { toolCalledAt: number; askedAgainAt: number }): LanguageModelV4 {
  let call = 0;
  return {
    specificationVersion: "v4",
    provider: "bench",
    modelId: "tool-caller",
    supportedUrls: {},
    doGenerate: async () => {
      throw new Error("not used");
    },
    doStream: async (options: { prompt: Array<{ role: string }> }) => {
      const afterTool = options.prompt.at(-1)?.role === "tool";
      if (afterTool) marks.askedAgainAt = performance.now();
      const id = `call_${call++}`;
      return {
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
            if (afterTool) {
              controller.enqueue({ type: "text-start", id: "t" });
              controller.enqueue({ type: "text-delta", id: "t", delta: "ok" });
              controller.enqueue({ type: "text-end", id: "t" });
            } else {
              controller.enqueue({
                type: "tool-call",
                toolCallId: id,
                toolName: "notes_read_notes",
                input: "{}",
              });
              marks.toolCalledAt = performance.now();
            }
            controller.enqueue({
              type: "finish",
              finishReason: afterTool
                ? { unified: "stop", raw: "stop" }
                : { unified: "tool-calls", raw: "tool_calls" },
              usage: unavailableUsage(),
            });
            controller.close();
          },
        }),
      };
    },
  } as unknown as LanguageModelV4;
}

const serverEnv = { NOTES_FILE: notesFile };
const mcp = new McpTools({
  servers: mcpServersSchema.parse({
    notes: { command: process.execPath, args: [SERVER], env: serverEnv, approval: "never" },
  }),
  env: {},
  logger: silentLogger,
});
await mcp.start();
const direct = new Client({ name: "bench", version: "1" });
await direct.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [SERVER],
    env: { ...serverEnv, PATH: process.env.PATH ?? "" },
  }),
);

const stores = openSqliteStores(join(dir.path, "bench.sqlite"));
const marks = { toolCalledAt: 0, askedAgainAt: 0 };
const runtime = new Runtime({
  store: stores.runtime,
  models: [{ label: "bench", model: toolCallingModel(marks) }],
  readUsage: toUsage,
  tools: () => mcp.toolSet().tools,
});

let turn = 0;
async function throughSwitchboard(): Promise<number> {
  const result = await runtime.submit({
    conversationId: `bench-${turn % 20}`,
    idempotencyKey: `t-${turn++}`,
    parts: [{ type: "text", text: "read my notes" }],
  }).result;
  if ((result as { state?: string }).state !== "completed")
    throw new Error(`run ended ${JSON.stringify(result)}`);
  return marks.askedAgainAt - marks.toolCalledAt;
}

async function directCall(): Promise<number> {
  const began = performance.now();
  await direct.callTool({ name: "read_notes", arguments: {} });
  return performance.now() - began;
}

for (let i = 0; i < 30; i++) {
  await throughSwitchboard();
  await directCall();
}
const through: number[] = [];
const straight: number[] = [];
const added: number[] = [];
for (let i = 0; i < calls; i++) {
  const t = await throughSwitchboard();
  const d = await directCall();
  through.push(t);
  straight.push(d);
  added.push(t - d);
}
await runtime.close({ gracePeriodMs: 0 });
stores.close();
await direct.close();
await mcp.stop();
dir.cleanup();

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
console.log(`\ntool-call overhead (${calls} calls each, alternating; local stdio MCP server, SQLite)`);
console.log("                               p50 ms     p99 ms");
const row = (label: string, values: number[]) =>
  console.log(
    `  ${label.padEnd(28)} ${pct(values, 50).toFixed(3).padStart(7)}   ${pct(values, 99).toFixed(3).padStart(8)}`,
  );
row("direct MCP call", straight);
row("through switchboard", through);
row("added per call", added);
console.log(
  `  ratio (through / direct)     ${(pct(through, 50) / pct(straight, 50)).toFixed(2)} at p50, ${(pct(through, 99) / pct(straight, 99)).toFixed(2)} at p99   target: added <= 5 ms at p50`,
);
