import type { AssistantContent, ModelMessage, ToolContent, UserContent } from "ai";
import type { ModelInputKind } from "./media.ts";
import type { PromptTurn } from "./store.ts";
import type { FilePart, Message, MessagePart } from "./types.ts";

/** What the model reads after an interrupted turn's partial text. */
export const INTERRUPTED_MARKER = "[interrupted: this turn was cut off before it finished]";

/** Earlier turns whose images and files are still shown; older ones become text references. */
export const MEDIA_TURNS = 4;

/** What projecting attachments needs: what the model accepts and the bytes of the blobs shown. */
export interface ProjectionMedia {
  accepts: ReadonlySet<ModelInputKind>;
  bytes: ReadonlyMap<string, Uint8Array>;
}

/** `shown`: this message is recent enough for its images and files to be sent as such. */
function userContent(message: Message, media: ProjectionMedia | undefined, shown: boolean): UserContent {
  const content: Exclude<UserContent, string> = [];
  for (const part of message.parts) {
    if (part.type === "text") content.push({ type: "text", text: part.text });
    if (part.type === "tool-approval-response") {
      const verdict = part.approved
        ? `approved by ${part.decidedBy}`
        : part.reason === "expired"
          ? "expired without a decision"
          : `denied by ${part.decidedBy}`;
      content.push({ type: "text", text: `[tool call ${part.toolName}: ${verdict}]` });
    }
    if (part.type === "file") content.push(...fileContent(part, media, shown));
  }
  return content;
}

type UserPart = Exclude<UserContent, string>[number];

function fileContent(part: FilePart, media: ProjectionMedia | undefined, shown: boolean): UserPart[] {
  const prepared = part.prepared;
  const name = part.name ?? (part.kind === "photo" ? "photo" : part.kind === "voice" ? "voice note" : "file");
  const size = (bytes: number | undefined) => (bytes === undefined ? "" : `, ${bytes} bytes`);
  if (!prepared) {
    return [text(`[attachment: ${name} (${part.mediaType ?? "unknown type"}${size(part.sizeBytes)})]`)];
  }
  if (prepared.status !== "fetched") {
    return [text(`[attachment: ${name} could not be used: ${prepared.note}]`)];
  }
  const label = `${name} (${prepared.mediaType}${size(prepared.sizeBytes)})`;
  if (prepared.text !== undefined) {
    return prepared.transcript
      ? [text(`[voice transcript of ${label}]: ${prepared.text}`)]
      : [text(`[file ${label}, its text follows]\n${prepared.text}`)];
  }
  const note = prepared.note ? `: ${prepared.note}` : "";
  if (prepared.imageBlobId) {
    // Without media (a compaction summary's transcript) an image is named, not shown.
    if (!media) return [text(`[image ${label}]`)];
    const bytes = media.bytes.get(prepared.imageBlobId);
    if (!media.accepts.has("image")) return [text(`[image ${label}: this model cannot see images]`)];
    if (!shown) return [text(`[image ${label}, shown in an earlier turn]`)];
    if (!bytes) return [text(`[image ${label}: no longer stored]`)];
    return [text(`[image ${label}]`), { type: "image", image: bytes, mediaType: imageType(bytes) }];
  }
  if (prepared.mediaType === "application/pdf" && media?.accepts.has("file")) {
    const bytes = media.bytes.get(prepared.blobId);
    if (!shown) return [text(`[file ${label}, shown in an earlier turn]`)];
    if (!bytes) return [text(`[file ${label}: no longer stored]`)];
    return [
      text(`[file ${label}]`),
      {
        type: "file",
        data: bytes,
        mediaType: "application/pdf",
        ...(part.name ? { filename: part.name } : {}),
      },
    ];
  }
  return [text(`[attachment: ${label}${note}]`)];
}

function text(value: string): UserPart {
  return { type: "text", text: value };
}

/** The scaled copies are JPEG or PNG (src/media/image.ts); the signature says which. */
function imageType(bytes: Uint8Array): string {
  return bytes[0] === 0x89 && bytes[1] === 0x50 ? "image/png" : "image/jpeg";
}

/**
 * Turns one assistant message into provider messages: text and tool calls, then the tool results
 * as a `tool` message, and inputs that joined mid-run as user messages at the point they joined.
 * Tool calls without a result (cut off mid-call) are dropped so the prompt stays valid.
 */
function assistantMessages(
  message: Message,
  joined: ReadonlyMap<string, Message>,
  media: ProjectionMedia | undefined,
  shown: boolean,
): ModelMessage[] {
  if (message.status === "superseded" || message.status === "failed") {
    return joinedOnly(message.parts, joined, media, shown);
  }
  const answered = new Set(message.parts.flatMap((p) => (p.type === "tool-result" ? [p.toolCallId] : [])));
  const out: ModelMessage[] = [];
  let assistant: Exclude<AssistantContent, string> = [];
  let tool: ToolContent = [];
  const flush = () => {
    if (assistant.length > 0) out.push({ role: "assistant", content: assistant });
    if (tool.length > 0) out.push({ role: "tool", content: tool });
    assistant = [];
    tool = [];
  };
  for (const part of message.parts) {
    switch (part.type) {
      case "text":
        if (tool.length > 0) flush();
        if (part.text.length > 0) assistant.push({ type: "text", text: part.text });
        break;
      case "tool-call":
        if (tool.length > 0) flush();
        if (answered.has(part.toolCallId)) {
          assistant.push({
            type: "tool-call",
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            input: part.input,
          });
        }
        break;
      case "tool-result":
        tool.push({
          type: "tool-result",
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          // A string goes as text: a cut output's head reads as it was written, not JSON-escaped.
          output: part.isError
            ? { type: "error-text", value: String(part.output) }
            : typeof part.output === "string"
              ? { type: "text", value: part.output }
              : { type: "json", value: (part.output ?? null) as never },
        });
        break;
      case "joined-input": {
        flush();
        const input = joined.get(part.messageId);
        if (input) out.push({ role: "user", content: userContent(input, media, shown) });
        break;
      }
      default:
        break;
    }
  }
  if (message.status === "interrupted" || message.status === "streaming") {
    if (message.status === "interrupted") {
      if (tool.length > 0) flush();
      assistant.push({ type: "text", text: INTERRUPTED_MARKER });
    }
  }
  flush();
  return out;
}

function joinedOnly(
  parts: readonly MessagePart[],
  joined: ReadonlyMap<string, Message>,
  media: ProjectionMedia | undefined,
  shown: boolean,
): ModelMessage[] {
  return parts.flatMap((p) => {
    const input = p.type === "joined-input" ? joined.get(p.messageId) : undefined;
    return input ? [{ role: "user" as const, content: userContent(input, media, shown) }] : [];
  });
}

/** `shown`: images and files of this turn are sent as such (it is among the recent turns). */
export function projectTurn(
  messages: readonly Message[],
  media?: ProjectionMedia,
  shown = true,
): ModelMessage[] {
  const joinedIds = new Set(
    messages.flatMap((m) =>
      m.role === "assistant" ? m.parts.flatMap((p) => (p.type === "joined-input" ? [p.messageId] : [])) : [],
    ),
  );
  const joined = new Map(messages.filter((m) => joinedIds.has(m.id)).map((m) => [m.id, m]));
  const out: ModelMessage[] = [];
  for (const message of messages) {
    if (joinedIds.has(message.id)) continue;
    if (message.role === "user") out.push({ role: "user", content: userContent(message, media, shown) });
    else out.push(...assistantMessages(message, joined, media, shown));
  }
  return out;
}

/** Rough token estimate for budgeting whole turns (4 characters per token). */
export function estimateTokens(messages: readonly Message[]): number {
  let chars = 0;
  for (const m of messages) for (const p of m.parts) chars += JSON.stringify(p).length;
  return Math.ceil(chars / 4);
}

/**
 * The prompt for the next step: recent whole turns that fit `maxHistoryTokens` (oldest dropped
 * first; a turn is never split, so tool calls stay with their results), then the run's own turn.
 * Images and files are sent as such only in the run's turn and the MEDIA_TURNS before it.
 */
export function buildPrompt(
  history: readonly PromptTurn[],
  current: readonly Message[],
  maxHistoryTokens: number,
  media?: ProjectionMedia,
): ModelMessage[] {
  const kept: PromptTurn[] = [];
  let budget = maxHistoryTokens;
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i]!;
    const cost = estimateTokens(turn.messages);
    if (cost > budget) break;
    budget -= cost;
    kept.unshift(turn);
  }
  return [
    ...kept.flatMap((t, index) => projectTurn(t.messages, media, index >= kept.length - MEDIA_TURNS)),
    ...projectTurn(current, media),
  ];
}
