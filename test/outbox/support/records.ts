import type { OutboxInsert } from "../../../outbox/types.ts";

let counter = 0;

/** A message insert for `target` with a fresh run id; override any field. */
export function messageInsert(
  target: string,
  markdown: string,
  overrides: Partial<OutboxInsert> = {},
): OutboxInsert {
  counter += 1;
  const runId = overrides.runId ?? `run_t${counter}`;
  return {
    key: `${runId}:0`,
    runId,
    conversationId: `conv-${target}`,
    channel: "telegram",
    account: "bot-1",
    target,
    kind: "message",
    markdown,
    ...overrides,
  };
}
