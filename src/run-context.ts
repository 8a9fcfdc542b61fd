import { z } from "zod";
import { channelNameSchema, surfaceKindSchema } from "../channels/types.ts";

/**
 * What a run carries about where it came from: enough to deliver its answer (channel, account,
 * reply target) and to tell the agent where it is. Stored with the run, so delivery after a
 * restart needs nothing else.
 */
export const runContextSchema = z.object({
  channel: channelNameSchema,
  account: z.string(),
  target: z.string(),
  replyTo: z.string().optional(),
  surface: surfaceKindSchema,
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
