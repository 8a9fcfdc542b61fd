/**
 * Waits in real time until `condition` holds. FakeClock's settle() is enough for SQLite, whose calls
 * are synchronous; a PostgreSQL repository answers over a socket, so work a timer started may
 * still be running when advanceTo() returns.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 3000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await Bun.sleep(5);
  }
}
