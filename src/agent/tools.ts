/**
 * read_skill and read_resource: the agent loads one skill body or reference file on demand, from
 * the generation its run is pinned to (never from the disk). Refusals are tool outputs the model
 * can act on: an unknown name lists what exists.
 */
import { type ToolSet, tool, zodSchema } from "ai";
import { z } from "zod";
import type { AgentFiles } from "./files.ts";

export const READ_SKILL = "read_skill";
export const READ_RESOURCE = "read_resource";
export const AGENT_FILE_TOOL_NAMES = [READ_SKILL, READ_RESOURCE] as const;

const MAX_LISTED = 20;

const skillInput = zodSchema(
  z.object({
    name: z.string().min(1).max(64).describe("The skill's name, exactly as the list of skills shows it."),
  }),
);
const resourceInput = zodSchema(
  z.object({
    path: z
      .string()
      .min(1)
      .max(512)
      .describe(
        "The file's path relative to the resources folder, exactly as listed, e.g. 'policies/refunds.md'.",
      ),
  }),
);

/** Why `path` is refused before any lookup, or null when it is a plain relative path. */
export function resourcePathProblem(path: string): string | null {
  if (path.includes("\0")) return "contains a NUL character";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path))
    return "is absolute; give a path relative to the resources folder";
  if (path.includes("\\")) return "contains a backslash; use / between folders";
  if (path.split("/").some((segment) => segment === ".." || segment === "." || segment === "")) {
    return "contains '..', '.' or an empty segment; give the path exactly as listed";
  }
  return null;
}

function listed(names: Iterable<string>): string {
  const all = [...names];
  const shown = all.slice(0, MAX_LISTED).join(", ");
  return all.length > MAX_LISTED ? `${shown}, … (${all.length} in all)` : shown || "none";
}

/** The two tools over `files`; only those the generation has something for. */
export function createAgentFileTools(files: AgentFiles): ToolSet {
  const tools: ToolSet = {};
  if (files.skills.size > 0) {
    tools[READ_SKILL] = tool({
      description:
        "Load the full instructions of one of your skills (listed in your instructions) before following it.",
      inputSchema: skillInput,
      execute: async ({ name }) => {
        const skill = files.skills.get(name);
        if (!skill) {
          return {
            ok: false,
            error: `No skill named "${name}".`,
            hint: `Skills: ${listed(files.skills.keys())}`,
          };
        }
        return { ok: true, name: skill.name, version: files.version, instructions: skill.body };
      },
    });
  }
  if (files.resources.size > 0) {
    tools[READ_RESOURCE] = tool({
      description: "Read one of your reference files (listed in your instructions) in full.",
      inputSchema: resourceInput,
      execute: async ({ path }) => {
        const problem = resourcePathProblem(path);
        if (problem)
          return {
            ok: false,
            error: `The path "${path}" ${problem}.`,
            hint: `Files: ${listed(files.resources.keys())}`,
          };
        const resource = files.resources.get(path);
        if (!resource) {
          return {
            ok: false,
            error: `No reference file "${path}".`,
            hint: `Files: ${listed(files.resources.keys())}`,
          };
        }
        return { ok: true, path: resource.path, version: files.version, text: resource.text };
      },
    });
  }
  return tools;
}
