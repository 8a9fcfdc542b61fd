import { type Clock, systemClock } from "../../../src/util/clock.ts";
import { type ChunkPlan, completionJson, errorResponse, planChunks } from "./fake-llm-responses.ts";
import {
  type ChatMessage,
  type FakeLlmRequest,
  type FakeLlmRule,
  type FakeReply,
  fakeLlmRulesBodySchema,
  lastUserTextOf,
  messageText,
  ruleMatches,
} from "./fake-llm-rules.ts";

export type { FakeLlmRequest, FakeLlmRule, FakeReply } from "./fake-llm-rules.ts";

/**
 * An OpenAI-compatible chat-completions server on 127.0.0.1 for tests. Serves
 * `POST /v1/chat/completions` (OpenAI-compatible base URL `${url}/v1`) and
 * `POST /api/v1/chat/completions` (OpenRouter base URL `${url}/api/v1`), streaming (SSE) and not.
 * Answers follow the first matching unexpired rule; with none, it echoes "echo: <last user text>".
 * A rule's text may contain `{{lastToolResult}}`: the text of the request's last tool message
 * (`{{lastUserText}}`: of its last user message); a tool call's input may contain `{{lastToolRef}}`: the stored-output reference (out_…) in it.
 *
 * Control over HTTP, for a gateway running in another process:
 * - `POST /__control/rules` `{ rules, append? }` replaces (or extends) the rules;
 * - `GET /__control/requests` returns `{ requests }`, the log since the last reset;
 * - `POST /__control/reset` restores the construction-time rules and clears the log.
 */
export interface FakeLlmServer {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** `${url}/v1`, for OPENAI_COMPATIBLE_BASE_URL. */
  readonly openaiBaseUrl: string;
  /** `${url}/api/v1`, for OPENROUTER_BASE_URL. */
  readonly openrouterBaseUrl: string;
  setRules(rules: FakeLlmRule[]): void;
  addRules(rules: FakeLlmRule[]): void;
  /** A copy of the request log since the last reset. */
  requests(): FakeLlmRequest[];
  /** Audio files posted to `/v1/audio/transcriptions`, oldest first. */
  transcriptions(): Array<{ model: string; filename: string; bytes: Uint8Array }>;
  /** What `/v1/audio/transcriptions` answers next (default "a transcript of N bytes"); a status fails it. */
  setTranscription(answer: { text: string } | { status: number }): void;
  /** The logged requests whose last user message contains `text`. */
  requestsContaining(text: string): FakeLlmRequest[];
  reset(): void;
  /** Closes every connection (hanging ones too) and stops listening. */
  stop(): Promise<void>;
}

export interface FakeLlmServerOptions {
  /** Default 0: any free port. */
  port?: number;
  rules?: FakeLlmRule[];
  /** Paces chunk delays. Default: the system clock. */
  clock?: Clock;
}

interface ActiveRule {
  rule: FakeLlmRule;
  used: number;
}

const COMPLETION_PATHS = new Set(["/v1/chat/completions", "/api/v1/chat/completions"]);
const DROP_FLUSH_MS = 20;
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

export function startFakeLlmServer(options: FakeLlmServerOptions = {}): FakeLlmServer {
  const clock = options.clock ?? systemClock;
  const initialRules = parseRules(options.rules ?? []);
  let rules: ActiveRule[] = initialRules.map((rule) => ({ rule, used: 0 }));
  let log: FakeLlmRequest[] = [];
  // Aborted on stop(), so hanging handlers and paced streams end with the server.
  const shutdown = new AbortController();

  const chooseRule = (request: FakeLlmRequest): { reply: FakeReply; ruleIndex: number | null } => {
    for (const [index, active] of rules.entries()) {
      if (active.rule.times !== undefined && active.used >= active.rule.times) continue;
      if (!ruleMatches(active.rule, request)) continue;
      active.used += 1;
      return { reply: withToolResult(active.rule.reply, request.messages), ruleIndex: index };
    }
    return { reply: { kind: "text", text: `echo: ${request.lastUserText}` }, ruleIndex: null };
  };

  const handleCompletion = async (httpRequest: Request, path: string): Promise<Response> => {
    let body: Record<string, unknown>;
    try {
      body = (await httpRequest.json()) as Record<string, unknown>;
    } catch {
      return Response.json({ error: { message: "request body is not JSON" } }, { status: 400 });
    }
    const messages = (Array.isArray(body.messages) ? body.messages : []) as ChatMessage[];
    const tools = (Array.isArray(body.tools) ? body.tools : []) as Array<{ function?: { name?: string } }>;
    const request: FakeLlmRequest = {
      index: log.length,
      path,
      model: typeof body.model === "string" ? body.model : "",
      stream: body.stream === true,
      messages,
      lastUserText: lastUserTextOf(messages),
      toolNames: tools.flatMap((tool) => (tool.function?.name ? [tool.function.name] : [])),
      body,
      authorization: httpRequest.headers.get("authorization"),
      ruleIndex: null,
      receivedAtMs: clock.now(),
    };
    const { reply, ruleIndex } = chooseRule(request);
    request.ruleIndex = ruleIndex;
    log.push(request);

    switch (reply.kind) {
      case "http-error":
        return errorResponse(reply);
      case "hang":
        await waitForAbort(AbortSignal.any([httpRequest.signal, shutdown.signal]));
        return new Response(null, { status: 499 });
      default:
        if (!request.stream) return Response.json(completionJson(request, reply));
        return new Response(
          sseStream(planChunks(request, reply), reply.chunkDelayMs ?? 0, clock, shutdown.signal),
          {
            headers: SSE_HEADERS,
          },
        );
    }
  };

  const handleControl = async (httpRequest: Request, path: string): Promise<Response> => {
    if (httpRequest.method === "GET" && path === "/__control/requests")
      return Response.json({ requests: log });
    if (httpRequest.method === "GET" && path === "/__control/rules") {
      return Response.json({ rules: rules.map((active) => active.rule) });
    }
    if (httpRequest.method === "POST" && path === "/__control/reset") {
      server.reset();
      return Response.json({ ok: true });
    }
    if (httpRequest.method === "POST" && path === "/__control/rules") {
      const parsed = fakeLlmRulesBodySchema.safeParse(await httpRequest.json().catch(() => undefined));
      if (!parsed.success) {
        return Response.json({ error: `invalid rules: ${parsed.error.message}` }, { status: 400 });
      }
      if (parsed.data.append) server.addRules(parsed.data.rules);
      else server.setRules(parsed.data.rules);
      return Response.json({ rules: rules.length });
    }
    return Response.json({ error: `no control route ${httpRequest.method} ${path}` }, { status: 404 });
  };

  let transcriptionLog: Array<{ model: string; filename: string; bytes: Uint8Array }> = [];
  let transcriptionAnswer: { text: string } | { status: number } | null = null;
  const handleTranscription = async (httpRequest: Request): Promise<Response> => {
    const form = await httpRequest.formData();
    const file = form.get("file");
    if (!(file instanceof Blob))
      return Response.json({ error: { message: "file is required" } }, { status: 400 });
    const bytes = new Uint8Array(await file.arrayBuffer());
    transcriptionLog.push({ model: String(form.get("model")), filename: (file as File).name ?? "", bytes });
    const answer = transcriptionAnswer ?? { text: `a transcript of ${bytes.byteLength} bytes` };
    if ("status" in answer) return Response.json({ error: { message: "fault" } }, { status: answer.status });
    return Response.json({ text: answer.text, duration: 1.5 });
  };

  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    idleTimeout: 0,
    fetch(httpRequest) {
      const path = new URL(httpRequest.url).pathname;
      if (path.startsWith("/__control/")) return handleControl(httpRequest, path);
      if (httpRequest.method === "POST" && COMPLETION_PATHS.has(path))
        return handleCompletion(httpRequest, path);
      if (httpRequest.method === "POST" && path === "/v1/audio/transcriptions")
        return handleTranscription(httpRequest);
      return Response.json({ error: { message: `no route ${httpRequest.method} ${path}` } }, { status: 404 });
    },
  });

  const url = `http://127.0.0.1:${http.port}`;
  const server: FakeLlmServer = {
    url,
    openaiBaseUrl: `${url}/v1`,
    openrouterBaseUrl: `${url}/api/v1`,
    setRules(next) {
      rules = parseRules(next).map((rule) => ({ rule, used: 0 }));
    },
    addRules(next) {
      rules.push(...parseRules(next).map((rule) => ({ rule, used: 0 })));
    },
    requests: () => structuredClone(log),
    transcriptions: () => [...transcriptionLog],
    setTranscription(answer) {
      transcriptionAnswer = answer;
    },
    requestsContaining: (text) => structuredClone(log.filter((r) => r.lastUserText.includes(text))),
    reset() {
      rules = initialRules.map((rule) => ({ rule, used: 0 }));
      log = [];
      transcriptionLog = [];
      transcriptionAnswer = null;
    },
    async stop() {
      shutdown.abort(new Error("fake LLM server stopped"));
      await http.stop(true);
    },
  };
  return server;
}

/**
 * `{{lastToolResult}}` in a text reply becomes the text of the request's last tool message, and
 * `{{lastUserText}}` that of its last user message; `{{lastToolRef}}` in a tool call's input, the first stored-output reference (out_…) in it.
 */
function withToolResult(reply: FakeReply, messages: ChatMessage[]): FakeReply {
  const lastTool = messages.findLast((message) => message.role === "tool");
  if (reply.kind === "tool-call") {
    const input = JSON.stringify(reply.input ?? null);
    if (!input.includes("{{lastToolRef}}")) return reply;
    const ref = (lastTool ? messageText(lastTool) : "").match(/out_[A-Za-z0-9_-]+/)?.[0] ?? "(no reference)";
    return { ...reply, input: JSON.parse(input.replaceAll("{{lastToolRef}}", ref)) };
  }
  if (reply.kind !== "text") return reply;
  let text = reply.text;
  if (text.includes("{{lastToolResult}}"))
    text = text.replaceAll("{{lastToolResult}}", lastTool ? messageText(lastTool) : "(no tool result)");
  if (text.includes("{{lastUserText}}")) text = text.replaceAll("{{lastUserText}}", lastUserTextOf(messages));
  return text === reply.text ? reply : { ...reply, text };
}

function parseRules(rules: FakeLlmRule[]): FakeLlmRule[] {
  return fakeLlmRulesBodySchema.parse({ rules }).rules;
}

function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

function sseStream(plan: ChunkPlan, chunkDelayMs: number, clock: Clock, stopped: AbortSignal) {
  const encoder = new TextEncoder();
  const event = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`);
  const cancelled = new AbortController();
  const signal = AbortSignal.any([cancelled.signal, stopped]);
  let sent = 0;

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (plan.dropAfter !== null && sent >= plan.dropAfter) {
        // Let the chunks already sent reach the client first. Erroring with no reason makes Bun
        // reset the connection (the client sees ECONNRESET) without logging an error.
        await clock.sleep(DROP_FLUSH_MS, signal).catch(() => undefined);
        return controller.error(undefined);
      }
      const next = plan.chunks[sent];
      if (next !== undefined) {
        if (sent > 0 && chunkDelayMs > 0) {
          try {
            await clock.sleep(chunkDelayMs, signal);
          } catch {
            if (!cancelled.signal.aborted) controller.error(undefined); // the server is stopping
            return;
          }
        }
        sent += 1;
        return controller.enqueue(event(next));
      }
      controller.enqueue(event(plan.finish));
      if (plan.usage !== null) controller.enqueue(event(plan.usage));
      controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      controller.close();
    },
    cancel() {
      cancelled.abort();
    },
  });
}

/** Talks to a fake LLM server in another process through its control routes. */
export function fakeLlmControl(url: string) {
  const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: body === undefined ? undefined : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`fake LLM control ${method} ${path}: HTTP ${response.status} ${await response.text()}`);
    return response.json();
  };
  return {
    setRules: async (rules: FakeLlmRule[]) => void (await call("POST", "/__control/rules", { rules })),
    addRules: async (rules: FakeLlmRule[]) =>
      void (await call("POST", "/__control/rules", { rules, append: true })),
    requests: async () =>
      ((await call("GET", "/__control/requests")) as { requests: FakeLlmRequest[] }).requests,
    reset: async () => void (await call("POST", "/__control/reset")),
  };
}

if (import.meta.main) {
  const portFlag = process.argv.indexOf("--port");
  const port = portFlag === -1 ? 0 : Number(process.argv[portFlag + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(
      "usage: bun test/support/llm/fake-llm-server.ts [--port N]   (N: 0-65535, 0 = any free port)",
    );
    process.exit(2);
  }
  const server = startFakeLlmServer({ port });
  console.log(server.url);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
