import { z } from "zod";
import type { DiscordEmulator } from "./emulator.ts";
import { REST_ROUTES, type RestRoute } from "./faults.ts";

const faultSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("rate_limit"), retryAfterMs: z.number().nonnegative() }),
  z.object({
    kind: z.literal("server_error"),
    status: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]),
  }),
  z.object({
    kind: z.literal("api_error"),
    status: z.union([z.literal(400), z.literal(401), z.literal(403), z.literal(404)]),
    code: z.number().int(),
    message: z.string(),
  }),
  z.object({ kind: z.literal("hang"), afterCommit: z.boolean().optional() }),
  z.object({ kind: z.literal("reset"), afterCommit: z.boolean().optional() }),
]);

const schemas = {
  users: z.object({ username: z.string().min(1), bot: z.boolean().optional() }),
  channels: z.object({ name: z.string().min(1) }),
  threads: z.object({
    parentId: z.string().optional(),
    name: z.string().min(1),
    ownerId: z.string(),
    botIsMember: z.boolean().optional(),
  }),
  dm: z.object({ userId: z.string(), content: z.string(), replyTo: z.string().optional() }),
  channelMessage: z.object({
    channelId: z.string(),
    userId: z.string(),
    content: z.string(),
    mentionBot: z.boolean().optional(),
    replyTo: z.string().optional(),
  }),
  redispatch: z.object({ messageId: z.string() }),
  runCommand: z.object({
    channelId: z.string(),
    userId: z.string(),
    name: z.string(),
    options: z
      .array(z.object({ name: z.string(), value: z.string(), focused: z.boolean().optional() }))
      .default([]),
    autocomplete: z.boolean().optional(),
  }),
  faults: z.object({
    route: z.enum(REST_ROUTES as [RestRoute, ...RestRoute[]]),
    fault: faultSchema,
    times: z.number().int().positive().optional(),
  }),
  rateLimit: z.object({ limit: z.number().int().positive(), windowMs: z.number().positive() }).nullable(),
  heartbeatAcks: z.object({ enabled: z.boolean() }),
  dropGateway: z.object({ code: z.number().int().optional() }),
};

/**
 * JSON endpoints under /__control/ so a test in another process can drive the emulator.
 * Each mirrors a method of {@link DiscordEmulator}; README.md lists them.
 */
export async function handleControl(
  emulator: DiscordEmulator,
  request: Request,
  url: URL,
): Promise<Response> {
  const action = `${request.method} ${url.pathname.slice("/__control".length)}`;
  try {
    const body = request.method === "GET" || request.method === "DELETE" ? undefined : await request.json();
    switch (action) {
      case "GET /info":
        return ok({
          apiUrl: emulator.apiUrl,
          gatewayUrl: emulator.gatewayUrl,
          bot: emulator.bot,
          guildId: emulator.guildId,
          generalChannelId: emulator.generalChannelId,
          connectedClients: emulator.connectedClients,
        });
      case "POST /users": {
        const input = schemas.users.parse(body);
        return ok(emulator.createUser(input.username, { bot: input.bot ?? false }));
      }
      case "POST /channels":
        return ok({ id: emulator.createTextChannel(schemas.channels.parse(body).name) });
      case "POST /threads":
        return ok({ id: emulator.createThread(stripUndefined(schemas.threads.parse(body))) });
      case "POST /dm": {
        const input = schemas.dm.parse(body);
        return ok(emulator.sendDm(input.userId, input.content, stripUndefined({ replyTo: input.replyTo })));
      }
      case "POST /channel-message": {
        const { channelId, userId, content, ...options } = schemas.channelMessage.parse(body);
        return ok(emulator.sendChannelMessage(channelId, userId, content, stripUndefined(options)));
      }
      case "POST /unseen-message": {
        const { channelId, userId, content, ...options } = schemas.channelMessage.parse(body);
        return ok(emulator.writeUnseen(channelId, userId, content, stripUndefined(options)));
      }
      case "POST /redispatch":
        emulator.redispatch(schemas.redispatch.parse(body).messageId);
        return ok({});
      case "GET /commands":
        return ok(emulator.commandRegistrations);
      case "POST /commands/run": {
        const input = schemas.runCommand.parse(body);
        const options = input.options.map((o) => stripUndefined(o));
        const run =
          input.autocomplete === true
            ? emulator.autocomplete(input.channelId, input.userId, input.name, options)
            : emulator.runCommand(input.channelId, input.userId, input.name, options);
        return ok(run);
      }
      case "POST /faults": {
        const input = schemas.faults.parse(body);
        emulator.failNext(input.route, stripUndefined(input.fault), input.times ?? 1);
        return ok({});
      }
      case "DELETE /faults":
        emulator.clearFaults();
        return ok({});
      case "POST /channel-rate-limit":
        emulator.setChannelRateLimit(schemas.rateLimit.parse(body));
        return ok({});
      case "POST /heartbeat-acks":
        emulator.setHeartbeatAcks(schemas.heartbeatAcks.parse(body).enabled);
        return ok({});
      case "POST /drop-gateway":
        emulator.dropGatewayConnections(schemas.dropGateway.parse(body).code ?? 4000);
        return ok({});
      case "POST /reconnect":
        emulator.requestReconnect();
        return ok({});
      case "POST /invalidate-sessions":
        emulator.invalidateSessions();
        return ok({});
      case "GET /rest-calls":
        return ok(emulator.restCalls);
      case "GET /gateway-log":
        return ok(emulator.gatewayLog);
      case "GET /messages": {
        const channelId = url.searchParams.get("channelId");
        if (!channelId) return problem(400, "Pass ?channelId=<id> to list a channel's visible messages.");
        return ok(emulator.visibleMessages(channelId));
      }
      default:
        return problem(404, `Unknown control action "${action}"; see test/emulators/discord/README.md.`);
    }
  } catch (error) {
    if (error instanceof z.ZodError) return problem(400, z.prettifyError(error));
    return problem(400, error instanceof Error ? error.message : String(error));
  }
}

function ok(body: unknown): Response {
  return Response.json(body);
}

function problem(status: number, message: string): Response {
  return Response.json({ error: message }, { status });
}

/** zod keeps absent optionals as `undefined` keys; the emulator's options treat them as absent. */
function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
