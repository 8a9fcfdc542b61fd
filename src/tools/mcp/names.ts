/*
 * Pure decisions about an MCP catalog: the names the model sees, which tools are offered, and the
 * ${VAR} expansion of header values.
 */

export const MAX_TOOL_NAME = 64;

/** `<server>_<tool>` with every character outside [a-zA-Z0-9_-] replaced by `_`, at most 64 long. */
export function exposedToolName(server: string, tool: string): string {
  return `${server}_${tool}`.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, MAX_TOOL_NAME);
}

/** Whether a tool passes the server's `tools: { allow, deny }` filter (deny wins). */
export function toolAllowed(
  tool: string,
  filter: { allow?: readonly string[]; deny: readonly string[] },
): boolean {
  if (filter.deny.includes(tool)) return false;
  return filter.allow === undefined || filter.allow.includes(tool);
}

export interface NamedTool {
  server: string;
  tool: string;
  name: string;
}

/**
 * Maps every (server, tool) to its exposed name. Two tools that end up with the same name are
 * refused: the model could not tell them apart, and a call would reach an unintended tool.
 */
export function assignNames(
  tools: ReadonlyArray<{ server: string; tool: string }>,
  reserved: ReadonlySet<string> = new Set(),
): { ok: true; tools: NamedTool[] } | { ok: false; error: string } {
  const byName = new Map<string, NamedTool>();
  for (const { server, tool } of tools) {
    const name = exposedToolName(server, tool);
    if (reserved.has(name)) {
      return {
        ok: false,
        error: `MCP tool "${tool}" of server "${server}" would be named ${name}, which a built-in tool already uses; rename the server in mcpServers or deny the tool with "tools": { "deny": ["${tool}"] }`,
      };
    }
    const earlier = byName.get(name);
    if (earlier) {
      return {
        ok: false,
        error: `MCP tools "${earlier.tool}" (server "${earlier.server}") and "${tool}" (server "${server}") would both be named ${name}; rename a server in mcpServers or deny one of them with "tools": { "deny": [...] }`,
      };
    }
    byName.set(name, { server, tool, name });
  }
  return { ok: true, tools: [...byName.values()] };
}

/**
 * Replaces each ${VAR} with the variable's value. A variable that is not set is an error naming
 * it (never the value of anything).
 */
export function expandVariables(
  value: string,
  env: Record<string, string | undefined>,
): { ok: true; value: string } | { ok: false; missing: string } {
  let missing: string | null = null;
  const expanded = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_whole, name: string) => {
    const found = env[name];
    if (found === undefined || found === "") {
      missing ??= name;
      return "";
    }
    return found;
  });
  return missing === null ? { ok: true, value: expanded } : { ok: false, missing };
}

/** Delay before the n-th restart (0-based): 1 s doubling to at most 30 s. */
export function restartDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5));
}
