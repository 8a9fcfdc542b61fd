import type { SlackEmulator } from "./emulator.ts";
import type { EventCallbackBody, SlackFault } from "./types.ts";

/**
 * `/__control/...` JSON endpoints mirroring the emulator's TypeScript controls, for tests whose
 * emulator runs in another process (see main.ts and control-client.ts):
 *
 *   GET  /__control/identity                      → {identity, apiUrl}
 *   POST /__control/events {payload}              → {envelopeId}  (Socket Mode delivery)
 *   GET  /__control/envelopes                     → {envelopes}
 *   POST /__control/envelopes/<id>/redeliver|duplicate
 *   POST /__control/faults {method, fault, times?}
 *   POST /__control/rate-limit {intervalMs|null}
 *   GET  /__control/rate-limit?channel=C…         → {rejections}
 *   POST /__control/channel-state {channel, archived?, botIsMember?}
 *   GET  /__control/calls?method=chat.postMessage → {calls}
 *   GET  /__control/messages?channel=C…           → {messages}
 *   GET  /__control/sockets                       → {open, ever}
 *   POST /__control/sockets/reconnect {reason?} | /__control/sockets/drop
 *   POST /__control/assistant {enabled, error?}   (the Agents & AI Apps feature)
 *   GET  /__control/assistant                     → {threads}
 *   POST /__control/reset
 */
export async function handleControlRequest(
  emulator: SlackEmulator,
  url: URL,
  request: Request,
): Promise<Response> {
  const path = url.pathname.slice("/__control/".length).split("/");
  try {
    const body = request.method === "POST" ? await readJson(request) : {};
    const result = dispatch(emulator, request.method, path, url.searchParams, body);
    return result === null
      ? Response.json({ error: `no control endpoint ${request.method} ${url.pathname}` }, { status: 404 })
      : Response.json(result);
  } catch (error) {
    return Response.json({ error: error instanceof Error ? error.message : String(error) }, { status: 400 });
  }
}

type Json = Record<string, unknown>;

function dispatch(
  emulator: SlackEmulator,
  method: string,
  path: string[],
  query: URLSearchParams,
  body: Json,
): Json | null {
  const [first, second, third] = path;
  const get = method === "GET";
  switch (first) {
    case "identity":
      return get ? { identity: emulator.identity, apiUrl: emulator.apiUrl } : null;
    case "events":
      if (get) return null;
      return {
        envelopeId: emulator.pushEvent(
          requireObject(body.payload, "payload") as unknown as EventCallbackBody,
        ),
      };
    case "slash-commands": {
      if (get) return { slashCommands: emulator.slashCommands() };
      const user = requireObject(body.user, "user");
      const command = emulator.slashCommand(requireString(body.command, "command"), {
        user: { id: requireString(user.id, "user.id"), name: requireString(user.name, "user.name") },
        channel: requireString(body.channel, "channel"),
        ...(typeof body.text === "string" ? { text: body.text } : {}),
        ...(typeof body.threadTs === "string" ? { threadTs: body.threadTs } : {}),
      });
      return { envelopeId: emulator.pushSlashCommand(command), body: command as unknown as Json };
    }
    case "envelopes":
      if (get && second === undefined) return { envelopes: emulator.envelopes() };
      if (get || second === undefined) return null;
      if (third === "redeliver") emulator.redeliver(second);
      else if (third === "duplicate") emulator.duplicate(second);
      else return null;
      return {};
    case "faults":
      if (get) return null;
      emulator.failNext(
        requireString(body.method, "method"),
        requireObject(body.fault, "fault") as unknown as SlackFault,
        typeof body.times === "number" ? body.times : 1,
      );
      return {};
    case "rate-limit":
      if (get) return { rejections: emulator.rateLimitRejections(query.get("channel") ?? undefined) };
      emulator.setChannelRateLimit(typeof body.intervalMs === "number" ? body.intervalMs : null);
      return {};
    case "channel-state":
      if (get) return null;
      emulator.setChannelState(requireString(body.channel, "channel"), {
        archived: typeof body.archived === "boolean" ? body.archived : undefined,
        botIsMember: typeof body.botIsMember === "boolean" ? body.botIsMember : undefined,
      });
      return {};
    case "calls":
      return get ? { calls: emulator.calls(query.get("method") ?? undefined) } : null;
    case "messages":
      return get ? { messages: emulator.messages(query.get("channel") ?? undefined) } : null;
    case "sockets":
      if (get) return { open: emulator.socketConnections(), ever: emulator.socketConnectionsEver() };
      if (second === "reconnect") emulator.requestReconnect(optionalString(body.reason));
      else if (second === "drop") emulator.dropSockets();
      else return null;
      return {};
    case "assistant":
      if (get) return { threads: emulator.assistantThreads() };
      if (typeof body.enabled !== "boolean") throw new Error('Field "enabled" must be true or false');
      emulator.setAssistantFeature(body.enabled, optionalString(body.error));
      return {};
    case "reset":
      if (get) return null;
      emulator.reset();
      return {};
    default:
      return null;
  }
}

async function readJson(request: Request): Promise<Json> {
  const text = await request.text();
  if (text === "") return {};
  const value: unknown = JSON.parse(text);
  return typeof value === "object" && value !== null ? (value as Json) : {};
}

function requireString(value: unknown, field: string): string {
  if (typeof value !== "string" || value === "")
    throw new Error(`Field "${field}" must be a non-empty string`);
  return value;
}

function optionalString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function requireObject(value: unknown, field: string): Json {
  if (typeof value !== "object" || value === null) throw new Error(`Field "${field}" must be a JSON object`);
  return value as Json;
}
