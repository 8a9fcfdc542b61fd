/** How a child agent's own run differs from any other: its step ceiling and its approval prompts. */
import { readRunContext } from "../run-context.ts";
import type { StopPolicy } from "../runtime/execute.ts";
import type { DeliveryPrompt } from "../runtime/store.ts";

/** Ends a child's run `policy_stop` at the ceiling it was spawned with (clamped to its parent's). */
export const CHILD_STEP_CEILING: StopPolicy = {
  name: "child_step_ceiling",
  when: ({ run, steps }) => {
    const child = readRunContext(run.context)?.child;
    return child !== undefined && steps >= child.maxSteps;
  },
};

/** A child's approval prompts, on its parent's chat, say which child asks. */
export function childPrompts(agent: string, prompts: readonly DeliveryPrompt[]): DeliveryPrompt[] {
  return prompts.map((prompt) => ({
    ...prompt,
    markdown: `🤖 Child agent **${agent}** asks:\n${prompt.markdown}`,
  }));
}
