import { z } from "zod";
import { channelNameSchema, inboundMessageSchema, surfaceKindSchema } from "../channels/types.ts";

/**
 * What a run carries about where it came from: enough to deliver its answer (channel, account,
 * reply target) and to tell the agent where it is. Stored with the run, so delivery after a
 * restart needs nothing else.
 */
export const runContextSchema = z.object({
  channel: channelNameSchema,
  account: z.string(),
  /**
   * The account's configured name when it is a named one (absent: the channel's `default`
   * account): its users are principals of their own (`<channel>:<name>:<user id>`) for budgets.
   */
  accountName: z.string().optional(),
  target: z.string(),
  replyTo: z.string().optional(),
  surface: surfaceKindSchema,
  /** The message's `where` (chat, Slack team, Discord guild and roles), for the config's bindings. */
  where: inboundMessageSchema.shape.where,
  delivery: z.enum(["terminal", "stream"]),
  /** Stream with the platform's native drafts where the target supports them, else edits. */
  nativeStreaming: z.boolean().optional(),
  conversationKey: z.string(),
  /** The room that holds the conversation when the adapter names one (a thread's channel). */
  roomKey: z.string().optional(),
  principal: z.object({ id: z.string(), name: z.string().optional() }),
  origin: z.enum(["user", "schedule"]),
  /**
   * The agent directory generation the run is pinned to from admission on: it keeps that version
   * of instructions, skills and resources across a reload, and this records which one it used.
   */
  agent: z.object({ dir: z.string(), version: z.string() }).optional(),
  /**
   * Present on a child agent's run (spawn_agent): which entry of `agents` it runs as (null: a copy
   * of its caller's settings), its handle, how deep it is, its parent and its step ceiling. The
   * rest of the context is its parent's: it answers to the same person on the same chat (approval
   * prompts go there), and its usage counts against that person's budget.
   */
  child: z
    .object({
      handle: z.string(),
      agent: z.string(),
      profile: z.string().nullable(),
      depth: z.number().int().min(1),
      parentRunId: z.string(),
      parentConversationId: z.string(),
      maxSteps: z.number().int().min(0),
    })
    .optional(),
});

export type RunContext = z.infer<typeof runContextSchema>;

/**
 * Parsed contexts by the stored object they came from: one execution hands the same `run.context`
 * to its tools, instructions, model choice and answer delivery, and each parse costs about as
 * much as the rest of that step's bookkeeping. Callers never mutate either object.
 */
const parsedContexts = new WeakMap<object, RunContext | null>();

/** The run's context, or null for runs not started by a channel (tests, tools). */
export function readRunContext(value: unknown): RunContext | null {
  if (typeof value !== "object" || value === null) return null;
  const cached = parsedContexts.get(value);
  if (cached !== undefined) return cached;
  const parsed = runContextSchema.safeParse(value);
  const context = parsed.success ? parsed.data : null;
  parsedContexts.set(value, context);
  return context;
}
