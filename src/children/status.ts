import type { ChildRecord } from "./store.ts";

/** "42 s", "3 min", "2 h": how long a child has been at work, for a chat line. */
function elapsed(ms: number): string {
  if (ms < 60_000) return `${Math.max(0, Math.round(ms / 1000))} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** /status's lines on the conversation's running child agents: one per child, under a count. */
export function runningChildrenLines(children: readonly ChildRecord[], nowMs: number): string[] {
  if (children.length === 0) return ["Child agents: none running"];
  return [
    `Child agents: ${children.length} running`,
    ...children.map((child) => {
      const { run } = child;
      const since = run.startedAtMs ?? child.createdAtMs;
      const steps = `${run.steps} step${run.steps === 1 ? "" : "s"}`;
      return `↳ ${child.agent} (${child.handle}): ${run.state}, ${steps}, for ${elapsed(nowMs - since)}`;
    }),
  ];
}
