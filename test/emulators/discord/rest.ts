import { type ApplicationCommands, commandListProblem } from "./application-commands.ts";
import type { Fault, FaultInjector, RestRoute } from "./faults.ts";
import type { GatewayHub } from "./gateway.ts";
import {
  CALLBACK_TYPE,
  type EmulatedInteraction,
  INTERACTION_ANSWER_MS,
  INTERACTION_TOKEN_MS,
  type Interactions,
} from "./interactions.ts";
import type { ChannelRateLimiter } from "./rate-limit.ts";
import type { EmulatedChannel, GatewayMessage, StoredMessage, World } from "./world.ts";

export const MAX_MESSAGE_CHARS = 2000;
const EPHEMERAL_FLAG = 64;
/** A deferred response's message shows "thinking…" while it carries this flag. */
const LOADING_FLAG = 128;
const MAX_NONCE_CHARS = 25;

/** One REST call as the emulator saw it. The Authorization header is never recorded. */
export interface RestCall {
  method: string;
  route: RestRoute | "unknown";
  path: string;
  /** HTTP status answered, or what happened instead of an answer. */
  status: number | "hang" | "reset";
  body: unknown;
  atMs: number;
  fault?: Fault["kind"];
  /** A create whose nonce matched an earlier one: the earlier message was returned, nothing new. */
  dedupedByNonce?: boolean;
}

export interface RestApiOptions {
  token: string;
  world: World;
  gateway: GatewayHub;
  interactions: Interactions;
  commands: ApplicationCommands;
  faults: FaultInjector;
  rateLimiter: () => ChannelRateLimiter | null;
  nonceWindowMs: number;
  echoOwnMessages: boolean;
  gatewayUrl: () => string;
  now: () => number;
  onChange: () => void;
}

interface Match {
  route: RestRoute;
  channelId?: string;
  messageId?: string;
  /** Interaction routes: the interaction (or application) id and the interaction token. */
  token?: string;
  /** Reaction routes: the emoji, decoded. */
  emoji?: string;
}

type Outcome = Response | "hang" | "reset";

const ROUTE_PATTERNS: ReadonlyArray<[string, RegExp, RestRoute]> = [
  ["GET", /^\/gateway\/bot$/, "GET /gateway/bot"],
  ["GET", /^\/users\/@me$/, "GET /users/@me"],
  ["GET", /^\/channels\/(\d+)$/, "GET /channels/:id"],
  ["GET", /^\/channels\/(\d+)\/messages$/, "GET /channels/:id/messages"],
  ["POST", /^\/channels\/(\d+)\/messages$/, "POST /channels/:id/messages"],
  ["PATCH", /^\/channels\/(\d+)\/messages\/(\d+)$/, "PATCH /channels/:id/messages/:id"],
  ["DELETE", /^\/channels\/(\d+)\/messages\/(\d+)$/, "DELETE /channels/:id/messages/:id"],
  ["POST", /^\/channels\/(\d+)\/typing$/, "POST /channels/:id/typing"],
  ["POST", /^\/interactions\/(\d+)\/([^/]+)\/callback$/, "POST /interactions/:id/:token/callback"],
  ["POST", /^\/webhooks\/(\d+)\/([^/]+)$/, "POST /webhooks/:id/:token"],
  [
    "PATCH",
    /^\/webhooks\/(\d+)\/([^/]+)\/messages\/(?:@|%40)original$/,
    "PATCH /webhooks/:id/:token/messages/@original",
  ],
  [
    "PUT",
    /^\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/@me$/,
    "PUT /channels/:id/messages/:id/reactions/:emoji/@me",
  ],
  [
    "DELETE",
    /^\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/@me$/,
    "DELETE /channels/:id/messages/:id/reactions/:emoji/@me",
  ],
  ["PUT", /^\/applications\/(\d+)\/commands$/, "PUT /applications/:id/commands"],
  ["PUT", /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/, "PUT /applications/:id/guilds/:id/commands"],
];

/** Interaction callbacks and follow-ups are authorised by the interaction token, not the bot token. */
const TOKEN_ROUTES = new Set<RestRoute>([
  "POST /interactions/:id/:token/callback",
  "POST /webhooks/:id/:token",
  "PATCH /webhooks/:id/:token/messages/@original",
]);

/** Discord's REST API under /api/v10, with fault injection, rate limits and nonce idempotency. */
export class RestApi {
  readonly calls: RestCall[] = [];
  /** The bot's reactions, by `<channel id>:<message id>`, in the order added. */
  readonly reactions = new Map<string, string[]>();
  private readonly hanging = new Set<() => void>();
  private readonly nonces = new Map<string, { messageId: string; atMs: number }>();

  constructor(private readonly options: RestApiOptions) {}

  /** `path` is what follows /api/v10. */
  async handle(request: Request, path: string): Promise<Response> {
    const method = request.method.toUpperCase();
    const body = await readJson(request);
    const match = matchRoute(method, path);
    const call: RestCall = {
      method,
      route: match?.route ?? "unknown",
      path,
      status: 0,
      body,
      atMs: this.options.now(),
    };
    const outcome = await this.answer(request, match, body, call);
    call.status = outcome instanceof Response ? outcome.status : outcome;
    this.calls.push(call);
    this.options.onChange();
    if (outcome === "reset") return resetConnection();
    if (outcome === "hang") return this.hang();
    return outcome;
  }

  /** Releases every hanging request (their clients have usually given up already). */
  releaseHanging(): void {
    for (const release of this.hanging) release();
    this.hanging.clear();
  }

  private async answer(
    request: Request,
    match: Match | null,
    body: unknown,
    call: RestCall,
  ): Promise<Outcome> {
    const byToken = match !== null && TOKEN_ROUTES.has(match.route);
    if (!byToken && request.headers.get("authorization") !== `Bot ${this.options.token}`) {
      return json(401, { message: "401: Unauthorized", code: 0 });
    }
    if (!match) return json(404, { message: "404: Not Found", code: 0 });
    const fault = this.options.faults.take(match.route);
    if (fault) call.fault = fault.kind;
    if (fault && !("afterCommit" in fault && fault.afterCommit))
      return faultResponse(fault, this.options.now());
    const response = this.route(match, body, call, new URL(request.url).searchParams);
    if (fault?.kind === "hang" || fault?.kind === "reset") return fault.kind;
    return response;
  }

  private route(match: Match, body: unknown, call: RestCall, query: URLSearchParams): Response {
    const { world } = this.options;
    switch (match.route) {
      case "GET /gateway/bot":
        return json(200, {
          url: this.options.gatewayUrl(),
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
        });
      case "GET /users/@me":
        return json(200, world.bot);
      case "GET /channels/:id": {
        const channel = this.channel(match);
        return channel ? json(200, world.channelPayload(channel)) : unknownChannel();
      }
      case "GET /channels/:id/messages":
        return this.listMessages(match, query);
      case "POST /channels/:id/messages":
        return this.createMessage(match, body, call);
      case "PATCH /channels/:id/messages/:id":
        return this.editMessage(match, body);
      case "DELETE /channels/:id/messages/:id":
        return this.deleteMessage(match);
      case "PUT /channels/:id/messages/:id/reactions/:emoji/@me":
        return this.react(match, true);
      case "DELETE /channels/:id/messages/:id/reactions/:emoji/@me":
        return this.react(match, false);
      case "POST /channels/:id/typing":
        return this.channel(match) ? noContent() : unknownChannel();
      case "POST /interactions/:id/:token/callback":
        return this.interactionCallback(match, body, query);
      case "POST /webhooks/:id/:token":
        return this.followUp(match, body);
      case "PATCH /webhooks/:id/:token/messages/@original":
        return this.editOriginal(match, body);
      case "PUT /applications/:id/commands":
        return this.overwriteCommands(match.channelId, "global", body);
      case "PUT /applications/:id/guilds/:id/commands":
        return this.overwriteCommands(match.channelId, match.messageId ?? "", body);
    }
  }

  /**
   * Channel history like Discord's: newest first; `after` gives the `limit` messages right after
   * it, `before` (or neither) the `limit` newest before it. Limit 1–100, default 50.
   */
  private listMessages(match: Match, query: URLSearchParams): Response {
    const channel = this.channel(match);
    if (!channel) return unknownChannel();
    const limit = Number(query.get("limit") ?? "50");
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return formError("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.");
    }
    const after = query.get("after");
    const before = query.get("before");
    for (const [field, value] of [
      ["after", after],
      ["before", before],
    ] as const) {
      if (value !== null && !/^\d{1,20}$/.test(value)) {
        return formError(field, "NUMBER_TYPE_COERCE", `Value "${value}" is not snowflake.`);
      }
    }
    const all = this.options.world.visibleMessages(channel.id);
    const page =
      after !== null
        ? all.filter((m) => BigInt(m.id) > BigInt(after)).slice(0, limit)
        : all.filter((m) => before === null || BigInt(m.id) < BigInt(before)).slice(-limit);
    return json(200, page.reverse().map(restView));
  }

  private createMessage(match: Match, body: unknown, call: RestCall): Response {
    const channel = this.channel(match);
    if (!channel) return unknownChannel();
    const input = asRecord(body);
    const uploads = ((body as Record<symbol, unknown> | undefined)?.[UPLOADS] ?? []) as UploadedAttachment[];
    const invalid = validateContent(input.content, uploads.length === 0) ?? validateNonce(input.nonce);
    if (invalid) return invalid;
    if (uploads.some((upload) => upload.bytes.byteLength > MAX_UPLOAD_BYTES)) {
      return json(413, { message: "Request entity too large", code: 40005 });
    }

    const limiter = this.options.rateLimiter();
    const decision = limiter?.tryAcquire(channel.id);
    if (limiter && decision && !decision.allowed)
      return rateLimited(decision.retryAfterMs, limiter.limit, this.options.now());

    const nonce = input.nonce === undefined ? undefined : String(input.nonce);
    const nonceKey = nonce === undefined ? undefined : `${channel.id}:${nonce}`;
    if (nonceKey !== undefined && input.enforce_nonce === true) {
      const seen = this.nonces.get(nonceKey);
      const earlier = seen && this.options.world.message(seen.messageId);
      if (seen && earlier && this.options.now() - seen.atMs < this.options.nonceWindowMs) {
        call.dedupedByNonce = true;
        return json(200, restView(earlier.message), decision?.allowed ? decision : undefined, limiter?.limit);
      }
    }

    const reference = asRecord(input.message_reference);
    let replyTo: string | undefined;
    if (typeof reference.message_id === "string") {
      const referenced = this.options.world.message(reference.message_id);
      if (referenced && !referenced.deleted && referenced.message.channel_id === channel.id) {
        replyTo = reference.message_id;
      } else if (reference.fail_if_not_exists !== false) {
        return formError("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message");
      }
    }

    const stored = this.options.world.addBotMessage(
      channel,
      (input.content as string | undefined) ?? "",
      nonce,
      replyTo,
    );
    if (Array.isArray(input.components)) stored.message.components = input.components;
    if (uploads.length > 0) {
      stored.uploads = uploads;
      stored.message.attachments = uploads.map((upload, index) => ({
        id: `${stored.message.id}${index}`,
        filename: upload.filename,
        size: upload.bytes.byteLength,
        content_type: upload.contentType,
        url: `https://cdn.discordapp.com/attachments/${channel.id}/${stored.message.id}/${upload.filename}`,
        proxy_url: `https://media.discordapp.net/attachments/${channel.id}/${stored.message.id}/${upload.filename}`,
      }));
    }
    if (nonceKey !== undefined)
      this.nonces.set(nonceKey, { messageId: stored.message.id, atMs: this.options.now() });
    if (this.options.echoOwnMessages) this.options.gateway.dispatch("MESSAGE_CREATE", stored.message);
    return json(200, restView(stored.message), decision?.allowed ? decision : undefined, limiter?.limit);
  }

  private editMessage(match: Match, body: unknown): Response {
    const stored = this.ownMessage(match);
    if (stored instanceof Response) return stored;
    const input = asRecord(body);
    if (input.content !== undefined) {
      const invalid = validateContent(input.content, false);
      if (invalid) return invalid;
      stored.message.content = input.content as string;
    }
    if (Array.isArray(input.components)) stored.message.components = input.components;
    stored.message.edited_timestamp = new Date(this.options.now()).toISOString();
    this.options.gateway.dispatch("MESSAGE_UPDATE", stored.message);
    return json(200, restView(stored.message));
  }

  /** The bot adds (or removes) its reaction on any message of the channel; both are idempotent. */
  private react(match: Match, add: boolean): Response {
    const stored = this.options.world.message(match.messageId ?? "");
    if (!stored || stored.deleted || stored.message.channel_id !== match.channelId)
      return json(404, { message: "Unknown Message", code: 10008 });
    const key = `${match.channelId}:${match.messageId}`;
    const emoji = match.emoji ?? "";
    const shown = (this.reactions.get(key) ?? []).filter((e) => e !== emoji);
    this.reactions.set(key, add ? [...shown, emoji] : shown);
    return noContent();
  }

  private deleteMessage(match: Match): Response {
    const stored = this.ownMessage(match);
    if (stored instanceof Response) return stored;
    stored.deleted = true;
    const { id, channel_id, guild_id } = stored.message;
    this.options.gateway.dispatch("MESSAGE_DELETE", { id, channel_id, ...(guild_id ? { guild_id } : {}) });
    return noContent();
  }

  /**
   * One answer per interaction, within INTERACTION_ANSWER_MS of the press (10062 after, 40060 for
   * a second answer). UPDATE_MESSAGE (7) edits the message the button is under.
   */
  private interactionCallback(match: Match, body: unknown, query: URLSearchParams): Response {
    const interaction = this.options.interactions.find(match.channelId ?? "", match.token ?? "");
    if (!interaction || this.options.now() - interaction.createdAtMs > INTERACTION_ANSWER_MS) {
      return json(404, { message: "Unknown interaction", code: 10062 });
    }
    if (interaction.callbacks.length > 0) {
      return json(400, { message: "Interaction has already been acknowledged.", code: 40060 });
    }
    const input = asRecord(body);
    const type = Number(input.type);
    if (!Object.values(CALLBACK_TYPE).includes(type as never)) {
      return formError("type", "BASE_TYPE_CHOICES", `Value must be one of ${Object.values(CALLBACK_TYPE)}.`);
    }
    const expected =
      interaction.kind === "autocomplete"
        ? [CALLBACK_TYPE.autocompleteResult]
        : interaction.kind === "command"
          ? [CALLBACK_TYPE.channelMessage, CALLBACK_TYPE.deferredChannelMessage]
          : [
              CALLBACK_TYPE.channelMessage,
              CALLBACK_TYPE.deferredChannelMessage,
              CALLBACK_TYPE.deferredUpdate,
              CALLBACK_TYPE.update,
            ];
    if (!expected.includes(type as never))
      return json(400, {
        message: "Interaction callback type is not valid for this interaction",
        code: 50035,
      });
    const data = asRecord(input.data);
    if (type === CALLBACK_TYPE.channelMessage) {
      const invalid = validateContent(data.content, true);
      if (invalid) return invalid;
    }
    interaction.callbacks.push(type);
    interaction.callbackData.push(input.data);
    if (interaction.kind === "command") {
      const original = this.respond(
        interaction,
        type === CALLBACK_TYPE.channelMessage ? (data.content as string) : null,
      );
      if (original && Array.isArray(data.components)) original.message.components = data.components;
    }
    if (type === CALLBACK_TYPE.update) {
      const stored = this.options.world.message(interaction.messageId);
      if (stored && !stored.deleted) {
        if (typeof data.content === "string") stored.message.content = data.content;
        if (Array.isArray(data.components)) stored.message.components = data.components;
        stored.message.edited_timestamp = new Date(this.options.now()).toISOString();
        this.options.gateway.dispatch("MESSAGE_UPDATE", stored.message);
      }
    }
    if (query.get("with_response") !== "true") return noContent();
    const original =
      interaction.originalMessageId === undefined
        ? undefined
        : this.options.world.message(interaction.originalMessageId);
    return json(200, {
      interaction: { id: interaction.id, type: interaction.kind === "autocomplete" ? 4 : 2 },
      ...(original ? { resource: { type, message: restView(original.message) } } : {}),
    });
  }

  /**
   * A slash command's response message: the answer (type 4) or "thinking…" (type 5, flag
   * LOADING until @original is edited), stored in the channel under the bot.
   */
  private respond(interaction: EmulatedInteraction, content: string | null): StoredMessage | undefined {
    const channel = this.options.world.channels.get(interaction.channelId);
    if (!channel) return undefined;
    const stored = this.options.world.addBotMessage(channel, content ?? "");
    (stored.message as unknown as Record<string, unknown>).interaction_metadata = {
      id: interaction.id,
      type: 2,
      user: this.options.world.requireUser(interaction.userId),
      authorizing_integration_owners: {},
    };
    if (content === null) stored.message.flags = LOADING_FLAG;
    interaction.originalMessageId = stored.message.id;
    if (this.options.echoOwnMessages) this.options.gateway.dispatch("MESSAGE_CREATE", stored.message);
    return stored;
  }

  /** The interaction the webhook token names, while the token works (15 minutes), or an error. */
  private webhookInteraction(match: Match): EmulatedInteraction | Response {
    const interaction = this.options.interactions.findByToken(match.token ?? "");
    if (!interaction || match.channelId !== this.options.world.bot.id) {
      return json(404, { message: "Unknown Webhook", code: 10015 });
    }
    if (this.options.now() - interaction.createdAtMs > INTERACTION_TOKEN_MS) {
      return json(401, { message: "Invalid Webhook Token", code: 50027 });
    }
    if (interaction.callbacks.length === 0) {
      return json(400, { message: "Interaction has not been acknowledged.", code: 40060 });
    }
    return interaction;
  }

  /**
   * A follow-up message through the interaction webhook; only after the interaction was answered.
   * A button's are ephemeral notices (not stored); a slash command's are channel messages.
   */
  private followUp(match: Match, body: unknown): Response {
    const interaction = this.webhookInteraction(match);
    if (interaction instanceof Response) return interaction;
    const input = asRecord(body);
    const invalid = validateContent(input.content, true);
    if (invalid) return invalid;
    const flags = typeof input.flags === "number" ? input.flags : 0;
    interaction.followUps.push({ content: input.content as string, flags });
    const channel = this.options.world.channels.get(interaction.channelId);
    if (!channel) return unknownChannel();
    if (interaction.kind === "command" && (flags & EPHEMERAL_FLAG) === 0) {
      const stored = this.options.world.addBotMessage(channel, input.content as string);
      stored.message.webhook_id = this.options.world.bot.id;
      if (this.options.echoOwnMessages) this.options.gateway.dispatch("MESSAGE_CREATE", stored.message);
      return json(200, restView(stored.message));
    }
    const message = this.options.world.buildEphemeral(channel, input.content as string, flags);
    return json(200, restView(message));
  }

  /** Edits the response message (ends "thinking…" after a deferral). */
  private editOriginal(match: Match, body: unknown): Response {
    const interaction = this.webhookInteraction(match);
    if (interaction instanceof Response) return interaction;
    const stored =
      interaction.originalMessageId === undefined
        ? undefined
        : this.options.world.message(interaction.originalMessageId);
    if (!stored || stored.deleted) return json(404, { message: "Unknown Message", code: 10008 });
    const input = asRecord(body);
    const invalid = validateContent(input.content, true);
    if (invalid) return invalid;
    stored.message.content = input.content as string;
    if (Array.isArray(input.components)) stored.message.components = input.components;
    delete stored.message.flags;
    stored.message.edited_timestamp = new Date(this.options.now()).toISOString();
    interaction.originalEdits.push(input.content as string);
    this.options.gateway.dispatch("MESSAGE_UPDATE", stored.message);
    return json(200, restView(stored.message));
  }

  /** A bulk overwrite of the application's commands, globally or in one guild. */
  private overwriteCommands(applicationId: string | undefined, scope: string, body: unknown): Response {
    if (applicationId !== this.options.world.bot.id)
      return json(403, { message: "Missing Access", code: 50001 });
    if (scope !== "global" && scope !== this.options.world.guildId)
      return json(403, { message: "Missing Access", code: 50001 });
    const problem = commandListProblem(body);
    if (problem) return formError(problem.field, "BASE_TYPE_BAD_LENGTH", problem.message);
    return json(200, this.options.commands.overwrite(scope, body as Array<Record<string, unknown>>));
  }

  private ownMessage(match: Match): StoredMessage | Response {
    if (!this.channel(match)) return unknownChannel();
    const stored = match.messageId === undefined ? undefined : this.options.world.message(match.messageId);
    if (!stored || stored.deleted || stored.message.channel_id !== match.channelId) {
      return json(404, { message: "Unknown Message", code: 10008 });
    }
    if (stored.message.author.id !== this.options.world.bot.id) {
      return json(403, { message: "Cannot edit a message authored by another user", code: 50005 });
    }
    return stored;
  }

  private channel(match: Match): EmulatedChannel | undefined {
    return match.channelId === undefined ? undefined : this.options.world.channels.get(match.channelId);
  }

  private hang(): Promise<Response> {
    return new Promise((resolve) => {
      const release = () => resolve(resetConnection());
      this.hanging.add(release);
    });
  }
}

function matchRoute(method: string, path: string): Match | null {
  for (const [routeMethod, pattern, route] of ROUTE_PATTERNS) {
    if (routeMethod !== method) continue;
    const found = pattern.exec(path);
    if (!found) continue;
    if (TOKEN_ROUTES.has(route)) return { route, channelId: found[1]!, token: found[2]! };
    return {
      route,
      ...(found[1] === undefined ? {} : { channelId: found[1] }),
      ...(found[2] === undefined ? {} : { messageId: found[2] }),
      ...(found[3] === undefined ? {} : { emoji: decodeURIComponent(found[3]) }),
    };
  }
  return null;
}

function faultResponse(fault: Fault, nowMs: number): Outcome {
  switch (fault.kind) {
    case "rate_limit":
      return rateLimited(fault.retryAfterMs, 5, nowMs);
    case "server_error":
      return json(fault.status, { message: "500: Internal Server Error", code: 0 });
    case "api_error":
      return json(fault.status, { message: fault.message, code: fault.code });
    case "hang":
    case "reset":
      return fault.kind;
  }
}

/** A 429 like Discord's: integer Retry-After header, precise `retry_after` in the body. */
function rateLimited(retryAfterMs: number, limit: number, nowMs: number): Response {
  const seconds = retryAfterMs / 1000;
  return new Response(
    JSON.stringify({ message: "You are being rate limited.", retry_after: seconds, global: false }),
    {
      status: 429,
      headers: {
        "content-type": "application/json",
        "retry-after": String(Math.ceil(seconds)),
        "x-ratelimit-limit": String(limit),
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": ((nowMs + retryAfterMs) / 1000).toFixed(3),
        "x-ratelimit-reset-after": seconds.toFixed(3),
        "x-ratelimit-bucket": "emulated-channel-messages",
        "x-ratelimit-scope": "user",
      },
    },
  );
}

function json(
  status: number,
  body: unknown,
  bucket?: { remaining: number; resetAfterMs: number },
  limit?: number,
): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (bucket && limit !== undefined) {
    headers["x-ratelimit-limit"] = String(limit);
    headers["x-ratelimit-remaining"] = String(bucket.remaining);
    headers["x-ratelimit-reset-after"] = (bucket.resetAfterMs / 1000).toFixed(3);
    headers["x-ratelimit-bucket"] = "emulated-channel-messages";
  }
  return new Response(JSON.stringify(body), { status, headers });
}

/** 204 without a content type: discord.js crashes on an empty body labelled JSON. */
function noContent(): Response {
  return new Response(null, { status: 204 });
}

/** Erroring the body before any byte makes Bun drop the connection: the client sees ECONNRESET. */
function resetConnection(): Response {
  return new Response(
    new ReadableStream({
      pull(controller) {
        controller.error();
      },
    }),
  );
}

function unknownChannel(): Response {
  return json(404, { message: "Unknown Channel", code: 10003 });
}

function formError(field: string, code: string, message: string): Response {
  return json(400, {
    message: "Invalid Form Body",
    code: 50035,
    errors: { [field]: { _errors: [{ code, message }] } },
  });
}

function validateContent(content: unknown, required: boolean): Response | undefined {
  if (content === undefined || content === "") {
    return required ? json(400, { message: "Cannot send an empty message", code: 50006 }) : undefined;
  }
  if (typeof content !== "string")
    return formError("content", "STRING_TYPE_CONVERT", "Could not interpret as string.");
  if (content.length > MAX_MESSAGE_CHARS) {
    return formError("content", "BASE_TYPE_MAX_LENGTH", `Must be ${MAX_MESSAGE_CHARS} or fewer in length.`);
  }
  return undefined;
}

function validateNonce(nonce: unknown): Response | undefined {
  if (nonce === undefined || typeof nonce === "number") return undefined;
  if (typeof nonce !== "string" || nonce.length > MAX_NONCE_CHARS) {
    return formError("nonce", "BASE_TYPE_MAX_LENGTH", `Must be ${MAX_NONCE_CHARS} or fewer in length.`);
  }
  return undefined;
}

/** The REST shape of a message: the gateway-only fields removed. */
function restView(message: GatewayMessage): Record<string, unknown> {
  const { guild_id: _guildId, member: _member, channel_type: _channelType, ...rest } = message;
  return rest;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}

/** Multipart uploads (`files[n]` parts) of a request, kept off the JSON body under this key. */
export const UPLOADS = Symbol("uploads");

export interface UploadedAttachment {
  filename: string;
  contentType: string;
  bytes: Uint8Array;
}

/** Discord's default upload limit for bots (without boosts). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/** A JSON body, or a multipart one: `payload_json` with its `files[n]` parts under UPLOADS. */
async function readJson(request: Request): Promise<unknown> {
  if ((request.headers.get("content-type") ?? "").includes("multipart/form-data")) {
    const form = await request.formData();
    const payload = form.get("payload_json");
    const body = (typeof payload === "string" ? JSON.parse(payload) : {}) as Record<string | symbol, unknown>;
    const uploads: UploadedAttachment[] = [];
    for (const [key, value] of form.entries()) {
      if (!key.startsWith("files[") || typeof value === "string") continue;
      const part = value as unknown as File;
      uploads.push({
        filename: part.name,
        contentType: part.type || "application/octet-stream",
        bytes: new Uint8Array(await part.arrayBuffer()),
      });
    }
    body[UPLOADS] = uploads;
    return body;
  }
  const text = await request.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
