/**
 * Child agents in SWITCHBOARD_CONFIG: `agents`, the entries a run may start as children with
 * spawn_agent, and `agentLimits`, how deep and how many (docs/configuration.md, "Child agents").
 */
import { z } from "zod";

/** What an entry's name looks like: what the model passes as spawn_agent's `agent`. */
const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** The name spawn_agent takes for a copy of the caller's own settings; no entry may take it. */
export const SELF_AGENT = "self";

/** Step ceiling of a child whose entry names none (then clamped to what its parent has left). */
export const DEFAULT_CHILD_MAX_STEPS = 8;

export const agentEntrySchema = z
  .object({
    /** Its agent directory (INSTRUCTIONS.md, skills, resources), relative to the config file. */
    agentDir: z.string().min(1).optional(),
    /** Appended to its instructions. */
    instructions: z.string().max(50_000).optional(),
    /** A name from `models`; absent: the model the caller's conversation uses. */
    model: z.string().min(1).optional(),
    /** The tool sets it is offered, as a surface's `tools`; absent: every set. */
    tools: z.array(z.string().min(1)).max(100).optional(),
    /** Its step ceiling, clamped to the steps its parent has left. */
    maxSteps: z.number().int().min(1).max(100).optional(),
    /** What message_agent's input does to its answer in progress. Default `queue`. */
    inputPolicy: z.enum(["queue", "inject", "interrupt", "supersede"]).optional(),
    /** One line the model reads in list_agents and the spawn_agent description. */
    description: z.string().max(500).optional(),
  })
  .strict();

export type AgentEntry = z.output<typeof agentEntrySchema>;

export const agentsSchema = z
  .record(z.string(), agentEntrySchema)
  .default({})
  .superRefine((agents, ctx) => {
    for (const name of Object.keys(agents)) {
      if (name === SELF_AGENT)
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${SELF_AGENT}" is reserved (spawn_agent's copy of the caller); name the entry otherwise`,
        });
      else if (!AGENT_NAME.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${name}" is not an agent name: use lowercase letters, digits, "-" or "_" (at most 32), e.g. "researcher"`,
        });
    }
  });

/** How far and how wide children go; defaults apply when `agentLimits` is absent. */
export const agentLimitsSchema = z
  .object({
    /** How deep children nest: 1 lets only top-level runs spawn, 2 (the default) lets their children too. */
    maxDepth: z.number().int().min(1).max(5).default(2),
    /** Children running at once per conversation (its own and its runs'), at most. Default 4. */
    maxRunningPerConversation: z.number().int().min(1).max(32).default(4),
  })
  .strict()
  .default({ maxDepth: 2, maxRunningPerConversation: 4 });

export type AgentLimits = z.output<typeof agentLimitsSchema>;

/**
 * Problems of entries that only the whole file can tell: a tool set or a model it does not
 * define. Each names the key (`agents.<name>.tools[1]`).
 */
export function agentEntryProblems(
  agents: Record<string, AgentEntry>,
  known: { toolSets: readonly string[]; models: readonly string[] },
): Array<{ path: Array<string | number>; message: string }> {
  const problems: Array<{ path: Array<string | number>; message: string }> = [];
  for (const [name, entry] of Object.entries(agents)) {
    for (const [i, set] of (entry.tools ?? []).entries()) {
      if (!known.toolSets.includes(set))
        problems.push({
          path: ["agents", name, "tools", i],
          message: `"${set}" is not a tool set; tool sets are ${known.toolSets.join(", ")} (the built-in ones and the names in mcpServers)`,
        });
    }
    if (entry.model !== undefined && !known.models.includes(entry.model))
      problems.push({
        path: ["agents", name, "model"],
        message:
          known.models.length === 0
            ? `"${entry.model}" is not defined: add it to "models" (e.g. "models": {"${entry.model}": "openrouter:<id>"}) or leave "model" out`
            : `"${entry.model}" is not a name in "models" (${known.models.join(", ")})`,
      });
  }
  return problems;
}
