import { createInterface } from "node:readline/promises";
import { loadAgentFiles } from "../agent/files.ts";
import { isSwitchboardError } from "../errors.ts";
import { instructionsFor } from "../gateway/app.ts";
import { loadConfig } from "../gateway/config.ts";
import { createModelRegistry } from "../models/registry.ts";
import { toUsage } from "../models/usage.ts";
import { Runtime } from "../runtime/runtime.ts";
import { openStoreBackend } from "../store/open-backend.ts";
import { newId } from "../util/ids.ts";

/**
 * `switchboard chat`: a terminal conversation with the agent on the same runtime and database as
 * the gateway (conversation key `cli:<user>`), answers streamed as they are written.
 */
export async function runChat(env: Record<string, string | undefined>): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) {
      process.stderr.write(`switchboard: configuration error: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const agentFiles = loadAgentFiles(config.agentDir);
  const stores = await openStoreBackend(config.database);
  const registry = createModelRegistry(config.modelEnv);
  const runtime = new Runtime({
    store: stores.runtime,
    models: registry.chain,
    readUsage: toUsage,
    inputPolicy: "queue",
    instructions: ({ nowMs }) => instructionsFor(config, null, nowMs, agentFiles),
  });
  const key = `cli:local:${env.USER ?? "user"}`;
  const out = process.stdout;
  runtime.subscribe((event) => {
    if (event.type === "assistant-delta") out.write(event.delta);
    if (event.type === "attempt-reset") out.write("\n[retrying]\n");
  });
  out.write(`switchboard chat — ${registry.describe()}. /new starts over, /exit quits.\n`);
  const rl = createInterface({ input: process.stdin, output: out, terminal: process.stdin.isTTY ?? false });
  const prompt = () => {
    if (process.stdin.isTTY) out.write("> ");
  };
  try {
    prompt();
    // The async iterator buffers lines typed (or piped) while an answer is written: none is lost,
    // and the end of input ends the chat.
    for await (const raw of rl) {
      const line = raw.trim();
      if (line === "/exit" || line === "/quit") break;
      if (line === "/new") {
        await stores.runtime.rotateConversationKey(key, Date.now());
        out.write("Started a new conversation.\n");
      } else if (line !== "") {
        const ticket = runtime.submit({
          conversationKey: key,
          idempotencyKey: newId("cli"),
          parts: [{ type: "text", text: line }],
        });
        const result = await ticket.result;
        out.write(
          result.state === "completed"
            ? "\n"
            : `\n[${result.state}${result.error ? `: ${result.error}` : ""}]\n`,
        );
      }
      prompt();
    }
  } finally {
    rl.close();
    await runtime.close({ gracePeriodMs: 2000 });
    await stores.close();
  }
}
