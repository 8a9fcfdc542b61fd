import { type Clock, systemClock } from "./clock.ts";

/**
 * The gateway process's clock. Test-only time travel for the end-to-end suite: inert unless
 * SWITCHBOARD_TEST_START_MS names an instant (milliseconds since the epoch); then the clock reads
 * that instant when the process starts and runs on in real time from it, so a test restarts the
 * gateway "the next day" to cross a budget's boundary. Sleeping and timers are real either way.
 */
export function gatewayClock(env: Record<string, string | undefined>): Clock {
  const raw = env.SWITCHBOARD_TEST_START_MS;
  if (raw === undefined || raw.trim() === "") return systemClock;
  const startMs = Number(raw);
  if (!Number.isSafeInteger(startMs) || startMs <= 0) {
    throw new Error(`SWITCHBOARD_TEST_START_MS must be milliseconds since the epoch, not '${raw}'.`);
  }
  const offsetMs = startMs - Date.now();
  return { ...systemClock, now: () => Date.now() + offsetMs };
}
