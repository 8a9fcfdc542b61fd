/**
 * What a chat in stream mode shows while its agent delegates: a short line naming the child
 * agents asked ("Asking researcher…"). Shown in the live preview after a step that called
 * spawn_agent, and kept in the message of a turn handed over to a waited child (its answer comes
 * later, as a new message).
 */
import type { MessagePart } from "../runtime/types.ts";
import { SPAWN_AGENT, waitsForChild } from "./tools.ts";

/** "_Asking researcher…_", "_Asking researcher and scribe…_"; `self` is "a helper". */
export function delegationLine(agents: readonly string[]): string {
  const names = [...new Set(agents.map((agent) => (agent === "self" ? "a helper" : agent)))];
  const list = names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  return `_Asking ${list}…_`;
}

/**
 * The live preview's line after a checkpoint whose step called spawn_agent (calls without an
 * outcome yet are the step's own); null when it called none.
 */
export function spawnProgressLine(
  tools: ReadonlyArray<{ toolName: string; input: unknown; outcome?: string }>,
): string | null {
  const agents = tools.flatMap((call) => {
    if (call.toolName !== SPAWN_AGENT || call.outcome !== undefined) return [];
    const agent = (call.input as { agent?: unknown } | null)?.agent;
    return typeof agent === "string" && agent !== "" ? [agent] : [];
  });
  return agents.length === 0 ? null : delegationLine(agents);
}

/** The agents a turn was handed over to: the waited spawns among the results closing `parts`. */
export function handedOverTo(parts: readonly MessagePart[]): string[] {
  const agents: string[] = [];
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    if (part.type !== "tool-result") break;
    if (waitsForChild(part)) agents.unshift(String((part.output as { agent?: unknown }).agent ?? "self"));
  }
  return agents;
}

/** The hand-over's answer with the line after what the run said before it. */
export function withDelegationLine(text: string, agents: readonly string[]): string {
  const line = delegationLine(agents);
  return text.trim() === "" ? line : `${text.trimEnd()}\n\n${line}`;
}
