/**
 * Test-only crash injection for the chaos suite. Inert unless SWITCHBOARD_TEST_KILL_POINT names a
 * point: then the process SIGKILLs itself the Nth time (SWITCHBOARD_TEST_KILL_AT, default 1) it
 * passes that point, exactly where a real crash would hurt most. With
 * SWITCHBOARD_TEST_KILL_CHANNEL, only passes on that channel's behalf count (where the caller says).
 */
export type KillPoint =
  | "ingress.admitted"
  | "step.streaming"
  | "step.persisted"
  | "tool.started"
  | "run.terminal-committed"
  /** A terminal commit that also admitted input to another conversation (a child's result). */
  | "run.input-handed-on"
  | "outbox.sending-persisted"
  | "outbox.platform-accepted"
  | "schedule.claimed";

const armed = process.env.SWITCHBOARD_TEST_KILL_POINT as KillPoint | undefined;
const killAt = Number(process.env.SWITCHBOARD_TEST_KILL_AT ?? "1");
const armedChannel = process.env.SWITCHBOARD_TEST_KILL_CHANNEL;
let passes = 0;

/** `channel`: whose work passes the point, when the point knows (a send's channel). */
export function killPoint(point: KillPoint, channel?: string): void {
  if (armed === undefined || armed !== point) return;
  if (armedChannel !== undefined && channel !== armedChannel) return;
  passes += 1;
  if (passes < killAt) return;
  process.stderr.write(`${JSON.stringify({ level: "warn", event: "test.kill_point", point })}\n`);
  process.kill(process.pid, "SIGKILL");
}
