/** Default and largest page sizes of the operator list views (CLI and HTTP API). */
export const OPERATOR_LIMITS = {
  runs: { default: 50, max: 1000 },
  conversations: { default: 50, max: 1000 },
  outbox: { default: 100, max: 1000 },
  messages: { default: 50, max: 500 },
  occurrences: { default: 20, max: 500 },
  search: { default: 20, max: 100 },
} as const;

/** The longest conversation search (`query` of the conversation list) accepted, in characters. */
export const CONVERSATION_QUERY_MAX = 200;
