/**
 * `POST /v1/chat/completions` (SWITCHBOARD_OPENAI_COMPAT=on): the agent behind the OpenAI chat
 * completions shape, so existing OpenAI clients can talk to it, tools and memory included. The
 * gateway keeps the conversation, so only the request's last user message is new input; the
 * conversation is the caller's api conversation named by `user` (made on first use) or by the
 * `X-Switchboard-Conversation` header (an id from POST /api/conversations). The message is
 * admitted like any API message: `Idempotency-Key`, else a digest of the request's messages, is
 * its key, so a retried request is the same run.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { parseConversationKey } from "../../../channels/api/keys.ts";
import { SwitchboardError } from "../../errors.ts";
import type { RuntimeEvent } from "../../runtime/events.ts";
import { eventStreamResponse, streamAbort } from "../../util/event-stream.ts";
import type { Logger } from "../../util/log.ts";
import { type ApiCaller, mayUseConversation, ownerOf } from "./api-caller.ts";
import { readJsonBody } from "./body.ts";
import type { ConversationApiServices } from "./conversation-api.ts";
import { json } from "./respond.ts";
import type { Route, RouteContext } from "./router.ts";

const contentPart = z.object({ type: z.string(), text: z.string().optional() }).loose();
const chatMessage = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  })
  .loose();

/** The fields read; others an OpenAI client sends (temperature, tools, …) are accepted and ignored. */
export const chatCompletionsBody = z
  .object({
    model: z.string().max(200).optional(),
    messages: z.array(chatMessage).min(1, "expected at least one message"),
    stream: z.boolean().optional(),
    user: z
      .string()
      .regex(/^[A-Za-z0-9._:@-]{1,128}$/, "use 1-128 characters of A-Z a-z 0-9 . _ : @ -")
      .optional(),
  })
  .loose();

export interface OpenAiCompatDeps {
  services: ConversationApiServices | undefined;
  maxBodyBytes: number;
  heartbeatMs: number;
  logger: Logger;
  track(abort: AbortController): () => void;
}

type Terminal = Extract<RuntimeEvent, { type: "terminal" }>;

export function openAiCompatRoute(deps: OpenAiCompatDeps): Route {
  return {
    method: "POST",
    pattern: "/v1/chat/completions",
    access: "api",
    handle: async (context) => {
      const api = deps.services;
      if (!api)
        throw new SwitchboardError(
          "platform_unavailable",
          "This gateway runs no conversation API; use the active gateway.",
        );
      const caller: ApiCaller =
        context.app !== undefined
          ? { kind: "app", name: context.app }
          : { kind: "operator", name: context.operator ?? null };
      const body = await readJsonBody(context.request, chatCompletionsBody, deps.maxBodyBytes);
      const last = body.messages.at(-1)!;
      const text = textOf(last.content);
      if (last.role !== "user" || text.trim() === "")
        throw new SwitchboardError(
          "input_invalid",
          "Invalid field 'messages': the last message must be the user's, with text (the gateway keeps the history itself).",
        );
      const { owner, ref, conversationId } = await conversationOf(context, caller, body.user, api);
      const idempotencyKey =
        context.request.headers.get("idempotency-key")?.trim() ||
        `oai-${createHash("sha256").update(JSON.stringify(body.messages)).digest("base64url").slice(0, 32)}`;
      if (!/^[A-Za-z0-9._:-]{1,200}$/.test(idempotencyKey))
        throw new SwitchboardError(
          "input_invalid",
          "Invalid header 'Idempotency-Key': use 1-200 characters of A-Z a-z 0-9 . _ : -.",
        );
      const outcome = await api.admit(owner, ref, { text, attachments: [], idempotencyKey });
      if ((outcome.kind !== "admitted" && outcome.kind !== "duplicate") || outcome.runId === null)
        throw new SwitchboardError(
          "input_invalid",
          `The message was not admitted (${outcome.kind === "ignored" ? outcome.reason : outcome.kind}); nothing reached the agent.`,
        );
      const runId = outcome.runId;
      const model = body.model ?? "switchboard";
      const created = Math.floor(Date.now() / 1000);
      const id = `chatcmpl-${runId}`;
      const abort = streamAbort(context.request, deps.track);
      const events = api.follow(conversationId, 0, abort.signal);

      if (!body.stream) {
        try {
          const terminal = await terminalOf(events, runId);
          return json({
            id,
            object: "chat.completion",
            created,
            model,
            choices: [
              {
                index: 0,
                message: { role: "assistant", content: answerOf(terminal) },
                finish_reason: "stop",
              },
            ],
            usage: usageOf(terminal),
          });
        } finally {
          abort.abort();
        }
      }
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      return eventStreamResponse({
        signal: abort.signal,
        heartbeatMs: deps.heartbeatMs,
        open(write, end) {
          void (async () => {
            write(chunk({ role: "assistant" }, null));
            // What the client was shown, so the answer's end adds only what the deltas lacked.
            let shown = "";
            try {
              for await (const event of events) {
                if (event.runId !== runId) continue;
                if (event.type === "assistant-delta") {
                  shown += event.delta;
                  write(chunk({ content: event.delta }, null));
                } else if (event.type === "attempt-reset") {
                  shown = "";
                } else if (event.type === "terminal") {
                  const answer = answerOf(event);
                  const rest = answer.startsWith(shown) ? answer.slice(shown.length) : `\n\n${answer}`;
                  if (rest !== "") write(chunk({ content: rest }, null));
                  write(chunk({}, "stop"));
                  write("data: [DONE]\n\n");
                  break;
                }
              }
            } catch (error) {
              if (!abort.signal.aborted) deps.logger.error("http.chat_completions_failed", { runId, error });
            } finally {
              end();
            }
          })();
          return () => abort.abort();
        },
      });
    },
  };
}

/** The conversation: the header's (the caller's own), else the caller's conversation for `user`. */
async function conversationOf(
  context: RouteContext,
  caller: ApiCaller,
  user: string | undefined,
  api: ConversationApiServices,
): Promise<{ owner: ReturnType<typeof ownerOf>; ref: string; conversationId: string }> {
  const header = context.request.headers.get("x-switchboard-conversation")?.trim();
  if (header) {
    const conversation = await api.conversation(header);
    const parsed = conversation?.key ? parseConversationKey(conversation.key) : null;
    if (conversation === null || parsed === null || !mayUseConversation(caller, conversation.key))
      throw new SwitchboardError(
        "not_found",
        `There is no api conversation ${header} this token may use; create one with POST /api/conversations.`,
      );
    return { ...parsed, conversationId: header };
  }
  if (user === undefined)
    throw new SwitchboardError(
      "input_invalid",
      "Name the conversation: send the 'user' field, or the 'X-Switchboard-Conversation' header with an id from POST /api/conversations.",
    );
  const owner = ownerOf(caller);
  const ref = createHash("sha256").update(`${owner}\n${user}`).digest("base64url").slice(0, 32);
  return { owner, ref, conversationId: await api.createConversation(owner, ref) };
}

async function terminalOf(events: AsyncIterable<RuntimeEvent>, runId: string): Promise<Terminal> {
  for await (const event of events) if (event.type === "terminal" && event.runId === runId) return event;
  throw new SwitchboardError(
    "platform_unavailable",
    "The gateway stopped before the run ended; send the request again.",
  );
}

/** The answer; a run waiting for approval says where to decide. */
function answerOf(terminal: Terminal): string {
  const waiting = (terminal.approvals ?? []).map(
    (approval) =>
      `(${approval.toolName} waits for approval: POST /api/approvals/${approval.approvalId}/approve or /deny)`,
  );
  return [terminal.text, ...waiting].filter((part) => part !== "").join("\n\n");
}

function usageOf(terminal: Terminal) {
  const prompt = terminal.usage.inputTokens ?? 0;
  const completion = terminal.usage.outputTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function textOf(content: z.infer<typeof chatMessage>["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).flatMap((part) => (part.type === "text" && part.text ? [part.text] : [])).join("\n");
}
