import type { AgentDirectories } from "../agent/directories.ts";
import type { AgentFiles } from "../agent/files.ts";
import type { RunContext } from "../run-context.ts";
import { settingsForContext } from "./binding-facts.ts";
import type { GatewayConfig } from "./config/index.ts";

/** Which generation of an agent directory a surface's new runs, and each running run, use. */
export interface AgentFilesFor {
  /** The generation new runs on a surface with `agentDir` (undefined: the default) are pinned to. */
  agentFor(agentDir: string | undefined): RunContext["agent"];
  /** The generation a run uses: the one it was pinned to at admission, else its surface's current one. */
  agentFilesOf(context: RunContext | null, runId?: string): AgentFiles;
}

export function agentFilesFor(
  agents: AgentDirectories,
  config: Pick<GatewayConfig, "agentDir" | "file">,
): AgentFilesFor {
  return {
    agentFor(agentDir) {
      const files = agents.current(agentDir ?? config.agentDir);
      return files.exists ? { dir: files.root, version: files.version } : undefined;
    },
    agentFilesOf(context, runId) {
      if (context?.agent && agents.roots.includes(context.agent.dir))
        return agents.pinned(context.agent.dir, context.agent.version, runId);
      const dir = context ? settingsForContext(config.file, context).agentDir : undefined;
      return agents.current(dir ?? config.agentDir);
    },
  };
}
