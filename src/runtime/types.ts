/** Canonical records of the runtime. Persisted; their meaning is versioned by the store schema. */

export type MessagePart =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | {
      type: "tool-call";
      toolCallId: string;
      toolName: string;
      input: unknown;
      /** Set (durably) just before the runtime runs the call; absent: it never started. */
      startedAtMs?: number;
      /** How many times the call was started (2: run again once after a crash). */
      attempts?: number;
    }
  | {
      type: "tool-result";
      toolCallId: string;
      toolName: string;
      output: unknown;
      isError: boolean;
      finishedAtMs?: number;
    }
  | FilePart
  /**
   * The tool call `toolCallId` waits for a person's decision (the AI SDK's approval request): it
   * is not run by this run, which ends `awaiting_approval`; the decision's successor run runs it.
   */
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string; toolName: string }
  /**
   * An input: a person's decision on an approval request. The successor run it starts carries the
   * call (`toolCallId`, `toolName`, `input`) into its own turn, runs it when approved, and gives
   * the model the denial otherwise. `binding` is the HMAC the request was stored with.
   */
  | {
      type: "tool-approval-response";
      approvalId: string;
      toolCallId: string;
      toolName: string;
      input: unknown;
      approved: boolean;
      /** Who decided, as the chat shows it; for the model and the transcript. */
      decidedBy: string;
      /** Why it was denied: `denied`, `expired`. */
      reason?: string;
      binding: string;
    }
  /** An input injected into this run at a step boundary; projected as a user message there. */
  | { type: "joined-input"; messageId: string };

/** What the platform said the attachment is (a hint only: the type used is sniffed from the bytes). */
export type AttachmentKind = "photo" | "file" | "audio" | "video" | "voice" | "sticker" | "other";

/**
 * An attachment, admitted by reference (`ref`, the platform's file id or URL). The run prepares it
 * before its first step and records the outcome in `prepared`, durably, so a restart neither
 * fetches a prepared file again nor loses one half fetched.
 */
export interface FilePart {
  type: "file";
  ref: string;
  kind?: AttachmentKind;
  /** As the platform stated it; replaced by the sniffed type once fetched. */
  mediaType?: string;
  name?: string;
  sizeBytes?: number;
  /** Playing time of audio or video as the platform stated it. */
  durationSeconds?: number;
  prepared?: PreparedFile;
}

export type PreparedFile =
  | {
      status: "fetched";
      blobId: string;
      /** Sniffed from the bytes; `application/octet-stream` when unknown. */
      mediaType: string;
      sizeBytes: number;
      /** Images: the scaled, re-encoded copy the model is shown. */
      imageBlobId?: string;
      /** Text files: the inlined text (bounded); audio: its transcript. */
      text?: string;
      /** True when `text` is a transcript of a voice note or audio. */
      transcript?: boolean;
      /** What the model is told instead of (or besides) the content. */
      note?: string;
      /** A line the user gets with the answer, whatever the model writes. */
      userNotice?: string;
    }
  /** Not fetched: over a limit, or the download failed after its retries. `note` says why. */
  | { status: "refused" | "failed"; note: string; userNotice?: string };

/** The answer's text: its text parts joined (reasoning and tool traffic excluded). */
export function answerText(parts: readonly MessagePart[]): string {
  return parts
    .filter((p): p is Extract<MessagePart, { type: "text" }> => p.type === "text")
    .map((p) => p.text)
    .join("");
}

export type InputPart = Extract<
  MessagePart,
  { type: "text" } | { type: "file" } | { type: "tool-approval-response" }
>;

export type MessageStatus = "streaming" | "complete" | "interrupted" | "superseded" | "failed";

export interface Message {
  id: string;
  conversationId: string;
  runId: string;
  role: "user" | "assistant";
  parts: MessagePart[];
  status: MessageStatus;
  createdAtMs: number;
}

export const ACTIVE_RUN_STATES = ["queued", "running", "interrupt_requested"] as const;
export const TERMINAL_RUN_STATES = [
  "completed",
  "interrupted",
  "superseded",
  "failed",
  "timeout",
  "policy_stop",
  "absorbed",
  "cancelled",
  /** Ended at a tool call that waits for a person's approval; the decision starts its successor. */
  "awaiting_approval",
] as const;

export type ActiveRunState = (typeof ACTIVE_RUN_STATES)[number];
export type TerminalRunState = (typeof TERMINAL_RUN_STATES)[number];
export type RunState = ActiveRunState | TerminalRunState;

export function isTerminalState(state: RunState): state is TerminalRunState {
  return (TERMINAL_RUN_STATES as readonly string[]).includes(state);
}

/** What happens to the conversation's earlier runs when this input arrives. */
export type InputPolicy = "queue" | "supersede" | "interrupt" | "interrupt-next" | "inject";

/**
 * Why an active run is being stopped. `withdrawn`: the person deleted the message it answers (it
 * ends `cancelled`, queued or running, and the partial reply is retracted). `edited`: the person
 * corrected the message it answers, and a run for the new text follows (it ends `cancelled` when
 * queued, `superseded` when running: the partial reply is retracted).
 */
export type StopReason = "interrupted" | "superseded" | "shutdown" | "timeout" | "withdrawn" | "edited";

/**
 * Token counts and cost exactly as the provider reported them. `undefined` means the provider
 * did not say: unavailable is not zero.
 */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
  costUsd?: number;
}

export interface StepRecord {
  step: number;
  model: string;
  finishReason: string;
  usage: Usage;
  startedAtMs: number;
  finishedAtMs: number;
}

/** Told when each model call of a run starts and ends (for latency metrics); called inline, keep it cheap. */
export interface ModelCallObserver {
  /** The call is about to be made: the prompt and tools are built. */
  started(runId: string): void;
  /** The model's stream ended (finished, failed or stopped). */
  finished(runId: string): void;
}
