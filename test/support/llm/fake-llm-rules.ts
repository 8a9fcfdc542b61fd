import { z } from "zod";

/*
 * The fake LLM server's script, as data: rules travel over HTTP to a server in another process,
 * so they are plain JSON, validated with zod at the boundary.
 */

const usageSchema = z.strictObject({
  promptTokens: z.number().int().nonnegative().optional(),
  completionTokens: z.number().int().nonnegative().optional(),
  cachedTokens: z.number().int().nonnegative().optional(),
  reasoningTokens: z.number().int().nonnegative().optional(),
  /** Sent as OpenRouter's `usage.cost`. Omitted: the server reports no cost. */
  costUsd: z.number().nonnegative().optional(),
});

const pacing = {
  /** Pause before each streamed chunk after the first, in milliseconds. Default 0. */
  chunkDelayMs: z.number().int().nonnegative().max(60_000).optional(),
  /** Token counts for the usage chunk. Omitted counts are derived from the text; `false` sends no usage. */
  usage: z.union([usageSchema, z.literal(false)]).optional(),
};

export const fakeReplySchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("text"),
    /** `{{lastToolResult}}` is replaced by the text of the request's last tool message, `{{lastUserText}}` by its last user message's. */
    text: z.string(),
    /** Number of content deltas the text is split into (whole words). Default 4. */
    chunks: z.number().int().positive().optional(),
    /** Cut the connection after this many content deltas, without finish_reason or [DONE]. */
    dropAfterChunks: z.number().int().nonnegative().optional(),
    ...pacing,
  }),
  z.strictObject({
    kind: z.literal("tool-call"),
    toolName: z.string().min(1),
    input: z.unknown(),
    /** Text streamed before the tool call. */
    text: z.string().optional(),
    /** Number of deltas the JSON arguments are streamed in. Default 3. */
    argumentChunks: z.number().int().positive().optional(),
    ...pacing,
  }),
  z.strictObject({
    kind: z.literal("http-error"),
    status: z.number().int().min(400).max(599),
    message: z.string().optional(),
    /** Sent as the Retry-After header (whole seconds). */
    retryAfterSeconds: z.number().int().nonnegative().optional(),
  }),
  /** Accepts the request and never answers until the client goes away. */
  z.strictObject({ kind: z.literal("hang") }),
]);

export const fakeLlmRuleSchema = z.strictObject({
  /** Every given condition must hold; no conditions matches every request. */
  match: z
    .strictObject({
      /** The last user message's text contains this. */
      lastUserContains: z.string().optional(),
      /** The role of the request's last message: "tool" right after a tool result. */
      lastRole: z.enum(["system", "user", "assistant", "tool"]).optional(),
      /** The requested model id equals this. */
      model: z.string().optional(),
      /** The arguments of a tool call in the last assistant message contain this (the call a tool result answers). */
      lastToolInputContains: z.string().optional(),
    })
    .optional(),
  reply: fakeReplySchema,
  /** How many requests the rule answers before it expires. Default: unlimited. */
  times: z.number().int().positive().optional(),
});

export const fakeLlmRulesBodySchema = z.strictObject({
  rules: z.array(fakeLlmRuleSchema),
  /** Add after the current rules instead of replacing them. */
  append: z.boolean().optional(),
});

export type FakeReply = z.infer<typeof fakeReplySchema>;
export type FakeLlmRule = z.infer<typeof fakeLlmRuleSchema>;
export type FakeUsage = z.infer<typeof usageSchema>;

/** One chat message as an OpenAI-compatible client sends it (only the fields the fake reads). */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** What the server saw of one completion request. */
export interface FakeLlmRequest {
  /** 0-based position in the log since the last reset. */
  index: number;
  path: string;
  model: string;
  stream: boolean;
  messages: ChatMessage[];
  /** Text of the last user message ("" when there is none). */
  lastUserText: string;
  /** Names of the tools offered. */
  toolNames: string[];
  /** The full JSON body as received. */
  body: Record<string, unknown>;
  /** The Authorization header as received (test keys only ever reach this fake). */
  authorization: string | null;
  /** Index of the rule that answered, or null for the default echo. */
  ruleIndex: number | null;
  receivedAtMs: number;
}

export function messageText(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.flatMap((part) => (part.type === "text" && part.text ? [part.text] : [])).join("\n");
}

export function lastUserTextOf(messages: ChatMessage[]): string {
  const lastUser = messages.findLast((message) => message.role === "user");
  return lastUser === undefined ? "" : messageText(lastUser);
}

export function ruleMatches(rule: FakeLlmRule, request: Pick<FakeLlmRequest, "messages" | "model">): boolean {
  const { match } = rule;
  if (match === undefined) return true;
  if (match.model !== undefined && match.model !== request.model) return false;
  if (match.lastRole !== undefined && request.messages.at(-1)?.role !== match.lastRole) return false;
  if (
    match.lastUserContains !== undefined &&
    !lastUserTextOf(request.messages).includes(match.lastUserContains)
  ) {
    return false;
  }
  if (
    match.lastToolInputContains !== undefined &&
    !lastToolInputOf(request.messages).includes(match.lastToolInputContains)
  ) {
    return false;
  }
  return true;
}

/** The JSON arguments of the tool calls in the last assistant message ("" when it made none). */
export function lastToolInputOf(messages: ChatMessage[]): string {
  const lastAssistant = messages.findLast((message) => message.role === "assistant");
  return (lastAssistant?.tool_calls ?? []).map((call) => call.function.arguments).join("\n");
}
