/**
 * spawn_agent, list_agents, message_agent and stop_agent: one run's hands on its child agents
 * (service.ts). A refusal (a limit, an unknown agent or handle) is thrown, so the model reads it
 * as the tool's error.
 */
import { type ToolSet, tool, zodSchema } from "ai";
import { z } from "zod";
import type { AgentEntry } from "./config.ts";
import type { Caller, ChildAgents } from "./service.ts";

export const SPAWN_AGENT = "spawn_agent";
export const CHILD_TOOL_NAMES = [SPAWN_AGENT, "list_agents", "message_agent", "stop_agent"] as const;

/** Whether a tool result ends the caller's turn: a spawn_agent that waits for its child. */
export function waitsForChild(result: { toolName: string; output: unknown; isError: boolean }): boolean {
  if (result.toolName !== SPAWN_AGENT || result.isError) return false;
  const output = result.output as { waiting?: unknown } | null;
  return typeof output === "object" && output !== null && output.waiting === true;
}

const MAX_TASK_CHARS = 20_000;

export function createChildTools(options: {
  children: ChildAgents;
  agents: Readonly<Record<string, AgentEntry>>;
  caller: Omit<Caller, "toolCallId">;
  /** Throws when the calling run lost ownership; called before every write. */
  fence: () => Promise<void>;
}): ToolSet {
  const { children, caller } = options;
  const described = Object.entries(options.agents).map(
    ([name, entry]) => `${name}${entry.description ? ` (${entry.description})` : ""}`,
  );
  const spawnInput = zodSchema(
    z.object({
      agent: z
        .string()
        .min(1)
        .describe(`Which agent: ${[...described, "self (a copy of you)"].join("; ")}`),
      task: z
        .string()
        .min(1)
        .max(MAX_TASK_CHARS)
        .describe("Everything it needs to do the task: it sees nothing of this conversation."),
      wait: z
        .boolean()
        .default(true)
        .describe(
          "true: end your turn now and continue when its result arrives. false: carry on; the result arrives later as a new message.",
        ),
    }),
  );
  const handleInput = z.string().min(1).max(40).describe("The handle spawn_agent returned (ag_...)");
  const at = (toolCallId: string): Caller => ({ ...caller, toolCallId });
  return {
    spawn_agent: tool({
      description:
        "Delegate a task to a child agent with its own instructions, tools and step budget. Its final answer comes back to you as a message.",
      inputSchema: spawnInput,
      execute: async (input, { toolCallId }) => {
        await options.fence();
        return children.spawn(at(toolCallId), input);
      },
    }),
    list_agents: tool({
      description: "The child agents of this conversation, with their states.",
      inputSchema: zodSchema(z.object({})),
      execute: async () => ({ children: await children.list(caller.conversationId) }),
    }),
    message_agent: tool({
      description: "Send a running child agent more input (a correction, a detail it needs).",
      inputSchema: zodSchema(z.object({ handle: handleInput, text: z.string().min(1).max(MAX_TASK_CHARS) })),
      execute: async (input, { toolCallId }) => {
        await options.fence();
        return children.message(at(toolCallId), input);
      },
    }),
    stop_agent: tool({
      description: "Stop a running child agent (and its own children); it delivers no result.",
      inputSchema: zodSchema(z.object({ handle: handleInput })),
      execute: async (input, { toolCallId }) => {
        await options.fence();
        return children.stop(at(toolCallId), input);
      },
    }),
  };
}
