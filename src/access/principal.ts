/**
 * A user as budgets and history search count them: `<channel>:<user id>` for the channel's
 * `default` account (as before accounts existed), `<channel>:<account>:<user id>` for a named one,
 * so a user of two bots is two principals. The stores' triggers build the same string from a
 * run's context (`channel`, `accountName`, `principal.id`).
 */
export function principalKey(channel: string, accountName: string | undefined, userId: string): string {
  return accountName === undefined ? `${channel}:${userId}` : `${channel}:${accountName}:${userId}`;
}
