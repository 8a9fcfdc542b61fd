/** `start` and `chat` hand the process over to long-running entry points written elsewhere. */
import { type CommandSpec, HELP_OPTION } from "../spec.ts";

type Entry = (env: NodeJS.ProcessEnv) => Promise<unknown> | unknown;

/** Imports `relativePath` (from this folder) lazily, so the CLI works before that module exists. */
async function loadEntry(relativePath: string, exportName: string): Promise<Entry> {
  const url = new URL(relativePath, import.meta.url).href;
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `Cannot load ${relativePath}: ${error instanceof Error ? error.message : String(error)}. Reinstall or update switchboard.`,
      { cause: error },
    );
  }
  const entry = module[exportName];
  if (typeof entry !== "function") {
    throw new Error(`${relativePath} does not export ${exportName}(); update switchboard.`);
  }
  return entry as Entry;
}

export const PROCESS_COMMANDS: CommandSpec[] = [
  {
    path: ["start"],
    synopsis: "start",
    summary: "Run the gateway (channels, runtime, outbox worker, scheduler, HTTP API) until SIGINT/SIGTERM.",
    details: "Configuration comes from the environment; see docs/ for the variables.",
    args: [],
    options: { ...HELP_OPTION },
    async run() {
      const runGateway = await loadEntry("../../gateway/main.ts", "runGateway");
      await runGateway(process.env);
    },
  },
  {
    path: ["chat"],
    synopsis: "chat",
    summary: "Talk to the agent in this terminal (a local channel over the same runtime).",
    args: [],
    options: { ...HELP_OPTION },
    async run() {
      const runChat = await loadEntry("../chat.ts", "runChat");
      await runChat(process.env);
    },
  },
];
