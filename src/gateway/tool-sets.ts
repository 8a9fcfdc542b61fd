import type { ToolSet } from "ai";

/**
 * The tools a run is offered: the named tool sets its surface picks (`"tools": ["notes", "web"]`),
 * or every set when the surface names none. A set is an MCP server's tools or a built-in group.
 */
export function pickToolSets(
  sets: ReadonlyMap<string, ToolSet>,
  chosen: readonly string[] | undefined,
): ToolSet {
  const picked: ToolSet = {};
  for (const [name, tools] of sets) {
    if (chosen === undefined || chosen.includes(name)) Object.assign(picked, tools);
  }
  return picked;
}
