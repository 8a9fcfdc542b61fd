/**
 * Surfaces: a channel and a kind of chat (`telegram:dm`, `*:group`). The policy each one gets, its
 * defaults, and the file's per-surface overrides that refine them.
 */
import { z } from "zod";
import { CHANNEL_NAMES, type ChannelName, SURFACE_KINDS, type SurfaceKind } from "../../../channels/types.ts";
import type { InputPolicy } from "../../runtime/types.ts";

/** What a new message does to a running answer, and how the answer is delivered, per surface. */
export interface SurfacePolicy {
  inputPolicy: Exclude<InputPolicy, "interrupt-next">;
  delivery: "terminal" | "stream";
  /** In groups and channels: answer only when mentioned, replied to, or in the bot's thread. */
  requireMention: boolean;
  /** Preview a streamed answer with the platform's native drafts where it has them (Telegram DMs). */
  nativeStreaming: boolean;
  /** Appended to the agent's instructions on this surface. */
  instructions?: string;
  /** The tool sets offered here, by name (MCP servers, `web`, `schedules`, `agent`, `state`, `history`); absent: all of them. */
  tools?: readonly string[];
  /** This surface's agent directory (absolute), instead of SWITCHBOARD_AGENT_DIR. */
  agentDir?: string;
  /**
   * What history_search sees: `user` (the default when absent) the conversations of the same user
   * on the same platform, `channel` every conversation in the current room (a Slack channel with
   * its threads, a Telegram group with its topics, whoever wrote there; a DM is its own room),
   * `conversation` only the current one, `off` no history tools.
   */
  historyScope?: HistoryScope;
  /** User ids who may decide any approval here, besides the user whose message asked. */
  approvers: readonly string[];
  /** The flood limit: messages one user may send per minute here (a burst of as many, then that rate). */
  messagesPerMinute: number;
  /**
   * What an edit of a message whose answer is finished becomes: `ignore`, or `new-input` (read as
   * a new message). An edit before then is always a correction of the unfinished run.
   */
  edits: EditsSetting;
  /** Show where the answer stands as the bot's reaction on the person's message (👀 ⏳ ✅ ⚠️). */
  statusReactions: boolean;
}

/** What an edit after the answer does; see SurfacePolicy.edits. */
export const EDITS_SETTINGS = ["ignore", "new-input"] as const;
export type EditsSetting = (typeof EDITS_SETTINGS)[number];

/** What a surface's history tools may search; see SurfacePolicy.historyScope. */
export const HISTORY_SCOPES = ["user", "channel", "conversation", "off"] as const;
export type HistoryScope = (typeof HISTORY_SCOPES)[number];

/** The flood limit where the config names none: 20 messages a minute per user and surface. */
export const DEFAULT_MESSAGES_PER_MINUTE = 20;

/** Defaults, documented in docs/configuration.md: supersede in DMs, queue in groups and threads. */
export const DEFAULT_SURFACES: Record<SurfaceKind, SurfacePolicy> = {
  dm: {
    inputPolicy: "supersede",
    delivery: "stream",
    requireMention: false,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
    edits: "ignore",
    statusReactions: true,
  },
  group: {
    inputPolicy: "queue",
    delivery: "terminal",
    requireMention: true,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
    edits: "ignore",
    statusReactions: false,
  },
  thread: {
    inputPolicy: "queue",
    delivery: "terminal",
    requireMention: true,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
    edits: "ignore",
    statusReactions: false,
  },
};

/** Every key of `surfaces`: a channel (or `*`) and a kind of chat (or `*`). */
export const SURFACE_KEYS = [...CHANNEL_NAMES, "*"].flatMap((channel) =>
  [...SURFACE_KINDS, "*"].map((surface) => `${channel}:${surface}`),
);
export const SURFACE_KEY_HINT = `a surface key is "<channel>:<surface>" with channel ${CHANNEL_NAMES.join(", ")} or *, and surface ${SURFACE_KINDS.join(", ")} or * (e.g. "telegram:dm", "*:group")`;

/** One entry of the file's `surfaces`: what it changes of the policy below it. */
export const surfaceOverrideSchema = z
  .object({
    inputPolicy: z.enum(["queue", "supersede", "interrupt", "inject"]).optional(),
    delivery: z.enum(["terminal", "stream"]).optional(),
    requireMention: z.boolean().optional(),
    nativeStreaming: z.boolean().optional(),
    instructions: z.string().max(20_000).optional(),
    tools: z.array(z.string().min(1)).max(100).optional(),
    /** An agent directory for this surface (relative to the config file), e.g. a support persona. */
    agentDir: z.string().min(1).optional(),
    /** What history_search sees on this surface: user (default), channel, conversation, or off. */
    historyScope: z.enum(HISTORY_SCOPES).optional(),
    approvers: z.array(z.string().min(1).max(200)).max(1000).optional(),
    messagesPerMinute: z.number().int().min(1).max(100_000).optional(),
    edits: z.enum(EDITS_SETTINGS).optional(),
    statusReactions: z.boolean().optional(),
  })
  .strict();

export type SurfaceOverride = z.output<typeof surfaceOverrideSchema>;

/** The policy for `channel:surface`: exact key, then `channel:*`, then `*:surface`, then `*:*`, over the defaults. */
export function surfacePolicy(
  file: { surfaces: Readonly<Record<string, SurfaceOverride>> },
  channel: ChannelName,
  surface: SurfaceKind,
): SurfacePolicy {
  const base = { ...DEFAULT_SURFACES[surface], edits: channelEdits(file, channel) };
  const overrides = [
    file.surfaces["*:*"],
    file.surfaces[`*:${surface}`],
    file.surfaces[`${channel}:*`],
    file.surfaces[`${channel}:${surface}`],
  ];
  let policy: SurfacePolicy = { ...base };
  for (const o of overrides) {
    if (!o) continue;
    policy = {
      inputPolicy: o.inputPolicy ?? policy.inputPolicy,
      delivery: o.delivery ?? policy.delivery,
      requireMention: o.requireMention ?? policy.requireMention,
      nativeStreaming: o.nativeStreaming ?? policy.nativeStreaming,
      ...((o.tools ?? policy.tools) ? { tools: o.tools ?? policy.tools } : {}),
      ...((o.historyScope ?? policy.historyScope)
        ? { historyScope: o.historyScope ?? policy.historyScope }
        : {}),
      ...((o.agentDir ?? policy.agentDir) ? { agentDir: o.agentDir ?? policy.agentDir } : {}),
      approvers: o.approvers ?? policy.approvers,
      messagesPerMinute: o.messagesPerMinute ?? policy.messagesPerMinute,
      edits: o.edits ?? policy.edits,
      statusReactions: o.statusReactions ?? policy.statusReactions,
      ...((o.instructions ?? policy.instructions)
        ? { instructions: o.instructions ?? policy.instructions }
        : {}),
    };
  }
  return policy;
}

/**
 * The channel's own default for `edits`: Telegram's and Matrix's sections had `editedMessages`
 * before `edits` was a surface key, and it still sets that channel's default.
 */
function channelEdits(file: object, channel: ChannelName): EditsSetting {
  const section = (file as Partial<Record<ChannelName, { editedMessages?: unknown }>>)[channel];
  const legacy = section?.editedMessages;
  return legacy === "new-input" ? "new-input" : "ignore";
}
