import { DEFAULT_CHILD_MAX_STEPS } from "./config.ts";

/**
 * The step ceiling a new child gets: what its entry asks (8 when it names none), clamped to what
 * its parent has left of its own ceiling. At most 0 means the parent has nothing left to lend.
 */
export function childSteps(input: {
  parentMaxSteps: number;
  parentStepsUsed: number;
  requested: number | undefined;
}): number {
  const left = input.parentMaxSteps - input.parentStepsUsed;
  return Math.max(0, Math.min(input.requested ?? DEFAULT_CHILD_MAX_STEPS, left));
}
