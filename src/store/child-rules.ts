/**
 * The decisions about child agents both engines take the same way, as pure functions: whether a
 * spawn may start, which ends of a parent stop its children, when a child's result goes back to
 * its parent, and the text the parent reads.
 */
import type { ChildRecord } from "../children/store.ts";
import type { TerminalRunState } from "../runtime/types.ts";

/** A new spawn starts only below the conversation's limit of running children. */
export function spawnAllowed(running: number, maxRunning: number): boolean {
  return running < maxRunning;
}

/**
 * A parent run that ends this way stops its running children in the same commit: it was stopped,
 * replaced, withdrawn, cut off or broke, so nobody is left to read what they find. A completed
 * parent (one that handed over to a waited child, or went on without it), one stopped at its step
 * ceiling and one awaiting approval keep them.
 */
export function stopsChildren(state: TerminalRunState): boolean {
  return (
    state === "interrupted" ||
    state === "superseded" ||
    state === "cancelled" ||
    state === "failed" ||
    state === "timeout"
  );
}

/**
 * Whether the run of a child's conversation ending in `state` delivers the child's result: the
 * link still runs, the run did not stop to wait for a person, and no other input of the child's is
 * still to be answered (a message_agent input queued behind it delivers when it ends).
 */
export function deliversResult(
  link: Pick<ChildRecord, "state"> | null,
  state: TerminalRunState,
  otherActiveRuns: number,
): boolean {
  return link !== null && link.state === "running" && state !== "awaiting_approval" && otherActiveRuns === 0;
}

/** The input the parent's conversation gets: who answered, how it ended, then the answer itself. */
export function resultText(
  link: Pick<ChildRecord, "agent" | "handle" | "task">,
  state: TerminalRunState,
  answer: string,
  error: string | null,
): string {
  const ending = state === "completed" ? "finished" : `ended ${state}${error ? ` (${error})` : ""}`;
  const body = answer.trim() === "" ? "(no answer)" : answer;
  return `[Result of child agent ${link.agent} (handle ${link.handle}), ${ending}. Its task was: ${short(link.task)}]\n\n${body}`;
}

function short(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
