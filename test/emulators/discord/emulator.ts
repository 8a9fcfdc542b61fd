import type { Server } from "bun";
import type { APIAttachment, APIUser } from "discord.js";
import { type Clock, systemClock } from "../../../src/util/clock.ts";
import { type FileFault, FileHost } from "../file-host.ts";
import {
  ApplicationCommands,
  type CommandRegistration,
  type RegisteredCommand,
} from "./application-commands.ts";
import { handleControl } from "./control.ts";
import { type Fault, FaultInjector, type RestRoute } from "./faults.ts";
import { GatewayHub, type GatewayLogEntry, type GatewaySocketData } from "./gateway.ts";
import { type CommandOptionInput, type EmulatedInteraction, Interactions } from "./interactions.ts";
import { type ChannelRateLimit, ChannelRateLimiter } from "./rate-limit.ts";
import { RestApi, type RestCall } from "./rest.ts";
import { SnowflakeGenerator } from "./snowflake.ts";
import {
  type EmulatedChannel,
  type GatewayMessage,
  type StoredMessage,
  type UserMessageOptions,
  World,
} from "./world.ts";

export interface DiscordEmulatorOptions {
  /** Bot token the REST API and IDENTIFY accept (without "Bot "). Default "emulated-discord-token". */
  token?: string;
  /**
   * The bot's user id; default a new snowflake. A real token's first part is this id in base64:
   * give `token: discordBotToken(botId)` to test what reads the id off the token (named accounts).
   */
  botId?: string;
  botUsername?: string;
  /** Sent in HELLO. Default 41 250 ms like Discord; use a few hundred ms to test zombie detection. */
  heartbeatIntervalMs?: number;
  /** How long a create's nonce is remembered for `enforce_nonce`. Default 5 minutes. */
  nonceWindowMs?: number;
  /** Per-channel message bucket; off unless given (Discord's is about 5 per 5 s). */
  channelRateLimit?: ChannelRateLimit;
  /** Dispatch MESSAGE_CREATE for the bot's own REST creates, as Discord does. Default true. */
  echoOwnMessages?: boolean;
  /** Time for snowflakes, timestamps, nonce windows and rate limits. Default the system clock. */
  clock?: Clock;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
}

/** A file on a user's message (see DiscordEmulator.sendDm). */
export interface DiscordFileInput {
  /** The test's name for the file, for `files.downloads(fileId)`. */
  fileId: string;
  filename: string;
  /** Served at the attachment URL; absent: the URL answers 404. */
  bytes?: Uint8Array;
  fault?: FileFault;
  contentType?: string;
  /** What the attachment states; default the bytes' length. */
  size?: number;
  /** Voice messages state their length. */
  durationSecs?: number;
}

export const DEFAULT_DISCORD_TOKEN = "emulated-discord-token";

/** A token shaped as Discord's: the bot's user id in base64, a timestamp part and an HMAC part. */
export function discordBotToken(botId: string): string {
  return `${Buffer.from(botId).toString("base64").replace(/=+$/, "")}.GhTsAA.emulated-hmac-${botId}`;
}

/** Waits for an emulator condition; resolves with the predicate's first truthy value. */
type Predicate<T> = () => T | undefined | null | false;

/**
 * A Discord REST + gateway emulator on 127.0.0.1 for discord.js clients. Start it with
 * {@link startDiscordEmulator}; pass `apiUrl` as the client's `rest.api`.
 */
export class DiscordEmulator {
  readonly token: string;
  readonly bot: APIUser;
  readonly guildId: string;
  /** A guild role besides @everyone, for messages sent with `{ roles: [memberRoleId] }`. */
  readonly memberRoleId: string;
  /** The guild text channel "general" that exists from the start. */
  readonly generalChannelId: string;
  private readonly world: World;
  private readonly gateway: GatewayHub;
  private readonly rest: RestApi;
  private readonly interactions: Interactions;
  private readonly commands: ApplicationCommands;
  private readonly faults = new FaultInjector();
  private readonly snowflakes: SnowflakeGenerator;
  /** Attachment downloads, at `/attachments/<fileId>/<filename>` (Discord's CDN). */
  readonly files = new FileHost();
  private readonly clock: Clock;
  private readonly waiters = new Set<() => void>();
  private rateLimiter: ChannelRateLimiter | null;
  private server: Server<GatewaySocketData> | null = null;
  private readonly listenPort: number;

  constructor(options: DiscordEmulatorOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.listenPort = options.port ?? 0;
    const now = () => this.clock.now();
    const ids = new SnowflakeGenerator(now);
    this.snowflakes = ids;
    this.token = options.token ?? DEFAULT_DISCORD_TOKEN;
    this.bot = {
      id: options.botId ?? ids.next(),
      username: options.botUsername ?? "switchboard",
      global_name: null,
      discriminator: "0",
      avatar: null,
      bot: true,
    };
    this.world = new World(ids, now, this.bot);
    this.guildId = this.world.guildId;
    this.memberRoleId = this.world.memberRoleId;
    this.generalChannelId = this.world.createTextChannel("general").id;
    this.rateLimiter = options.channelRateLimit
      ? new ChannelRateLimiter(options.channelRateLimit, now)
      : null;
    const onChange = () => this.notify();
    this.gateway = new GatewayHub({
      token: this.token,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
      bot: this.bot,
      resumeUrl: () => this.gatewayUrl,
      guildIds: () => [this.world.guildId],
      guildCreate: () => this.world.guildCreatePayload(),
      onChange,
    });
    this.interactions = new Interactions(ids, this.world, now);
    this.commands = new ApplicationCommands(ids, this.bot.id, now);
    this.rest = new RestApi({
      commands: this.commands,
      token: this.token,
      world: this.world,
      gateway: this.gateway,
      interactions: this.interactions,
      faults: this.faults,
      rateLimiter: () => this.rateLimiter,
      nonceWindowMs: options.nonceWindowMs ?? 5 * 60_000,
      echoOwnMessages: options.echoOwnMessages ?? true,
      gatewayUrl: () => this.gatewayUrl,
      now,
      onChange,
    });
  }

  /** Binds 127.0.0.1 on `options.port`, or on a free port. */
  listen(): this {
    if (this.server) throw new Error("Discord emulator: listen() was already called.");
    const gateway = this.gateway;
    this.server = Bun.serve<GatewaySocketData>({
      hostname: "127.0.0.1",
      port: this.listenPort,
      fetch: (request, server) => this.route(request, server),
      websocket: {
        open: (socket) => gateway.onOpen(socket),
        message: (socket, raw) => gateway.onMessage(socket, raw),
        close: (socket, code) => gateway.onClose(socket, code),
      },
    });
    return this;
  }

  get port(): number {
    if (!this.server?.port) throw new Error("Discord emulator: call listen() first.");
    return this.server.port;
  }

  /** Base URL of the server, e.g. http://127.0.0.1:PORT */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What discord.js takes as `rest.api`: http://127.0.0.1:PORT/api */
  get apiUrl(): string {
    return `${this.baseUrl}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}/gateway`;
  }

  // ── world ────────────────────────────────────────────────────────────────────────────────────

  createUser(username: string, options: { bot?: boolean } = {}): APIUser {
    return this.world.createUser(username, options);
  }

  /** A new guild text channel, announced with CHANNEL_CREATE to connected clients. */
  createTextChannel(name: string): string {
    const channel = this.world.createTextChannel(name);
    this.gateway.dispatch("CHANNEL_CREATE", this.world.channelPayload(channel));
    return channel.id;
  }

  /** A new public thread under `parentId`, announced with THREAD_CREATE. */
  createThread(options: { parentId?: string; name: string; ownerId: string; botIsMember?: boolean }): string {
    const thread = this.world.createThread({
      parentId: options.parentId ?? this.generalChannelId,
      name: options.name,
      ownerId: options.ownerId,
      botIsMember: options.botIsMember ?? options.ownerId === this.bot.id,
    });
    this.gateway.dispatch("THREAD_CREATE", { ...this.world.channelPayload(thread), newly_created: true });
    return thread.id;
  }

  dmChannelId(userId: string): string {
    return this.world.dmChannelFor(userId).id;
  }

  channel(id: string): EmulatedChannel | undefined {
    return this.world.channels.get(id);
  }

  // ── inbound traffic ──────────────────────────────────────────────────────────────────────────

  /** A DM from `userId` to the bot, dispatched as MESSAGE_CREATE with channel_type 1. */
  sendDm(
    userId: string,
    content: string,
    options: Pick<UserMessageOptions, "replyTo"> & { files?: DiscordFileInput[] } = {},
  ): GatewayMessage {
    const channel = this.world.dmChannelFor(userId);
    const { files, ...rest } = options;
    const attachments = files?.map((file) => this.attachment(file));
    return this.dispatchMessage(
      this.world.addUserMessage(channel.id, userId, content, {
        ...rest,
        ...(attachments ? { attachments } : {}),
      }),
    );
  }

  /**
   * An attachment served by this emulator: registers `bytes` (unless `bytes` is absent: a file
   * that was never uploaded) and describes it as Discord does (`size` defaults to the bytes').
   */
  private attachment(file: DiscordFileInput): APIAttachment {
    const id = this.snowflakes.next();
    const path = `${id}/${file.filename}`;
    if (file.bytes) this.files.add(file.fileId, file.bytes, file.fault, path);
    return {
      id,
      filename: file.filename,
      size: file.size ?? file.bytes?.byteLength ?? 0,
      url: `${this.baseUrl}/attachments/${path}`,
      proxy_url: `${this.baseUrl}/attachments/${path}`,
      ...(file.contentType ? { content_type: file.contentType } : {}),
      ...(file.durationSecs === undefined ? {} : { duration_secs: file.durationSecs }),
    };
  }

  /** A message from `userId` in a guild text channel or thread. */
  sendChannelMessage(
    channelId: string,
    userId: string,
    content: string,
    options: UserMessageOptions = {},
  ): GatewayMessage {
    return this.dispatchMessage(this.world.addUserMessage(channelId, userId, content, options));
  }

  /**
   * A message written while no client listened (gateway down, or a crash before it was read): in
   * the channel history for GET /channels/:id/messages, never dispatched.
   */
  writeUnseen(
    channelId: string,
    userId: string,
    content: string,
    options: UserMessageOptions = {},
  ): GatewayMessage {
    const message = this.world.addUserMessage(channelId, userId, content, options);
    this.notify();
    return message;
  }

  /**
   * `userId` presses the button with `customId` under the bot's message `messageId`: an
   * INTERACTION_CREATE (type 3, component_type 2). The application must answer through
   * POST /interactions/:id/:token/callback within 3 s. `forged` sends a custom_id the message
   * does not carry (a made-up payload).
   */
  pressButton(
    messageId: string,
    userId: string,
    customId: string,
    options: { forged?: boolean } = {},
  ): EmulatedInteraction {
    const { interaction, payload } = this.interactions.press(messageId, userId, customId, options);
    this.gateway.dispatch("INTERACTION_CREATE", payload);
    this.notify();
    return interaction;
  }

  /** Sends the INTERACTION_CREATE of an earlier press or slash command again (a duplicate delivery). */
  redispatchInteraction(interactionId: string): void {
    const earlier = this.interactions.all.find((i) => i.id === interactionId);
    if (!earlier) throw new Error(`Discord emulator: no interaction ${interactionId}.`);
    const channel = this.world.channels.get(earlier.channelId);
    const guildId = channel?.kind === "dm" ? undefined : this.guildId;
    const commandId = earlier.command ? (this.commands.find(earlier.command.name, guildId)?.id ?? "") : "";
    const { payload } = this.interactions.replay(earlier, commandId);
    this.gateway.dispatch("INTERACTION_CREATE", payload);
  }

  /**
   * `userId` runs the slash command `/name` with `options` in `channelId`: an INTERACTION_CREATE
   * (type 2). Only a registered command can run (guild commands in the guild, global ones
   * anywhere). The application must answer within 3 s (type 4, or 5 then edit @original), and
   * its token works for 15 minutes.
   */
  runCommand(
    channelId: string,
    userId: string,
    name: string,
    options: CommandOptionInput[] = [],
  ): EmulatedInteraction {
    return this.dispatchCommand(channelId, userId, name, options, "command");
  }

  /** `userId` is typing the option marked `focused` of `/name`: an autocomplete interaction (type 4). */
  autocomplete(
    channelId: string,
    userId: string,
    name: string,
    options: CommandOptionInput[],
  ): EmulatedInteraction {
    return this.dispatchCommand(channelId, userId, name, options, "autocomplete");
  }

  /** Every accepted bulk overwrite of the application's commands, in order (`scope`: global or a guild id). */
  get commandRegistrations(): readonly CommandRegistration[] {
    return this.commands.registrations;
  }

  /** The commands registered now for `scope` (`global` or a guild id). */
  registeredCommands(scope: string): RegisteredCommand[] {
    return this.commands.current(scope);
  }

  private dispatchCommand(
    channelId: string,
    userId: string,
    name: string,
    options: CommandOptionInput[],
    kind: "command" | "autocomplete",
  ): EmulatedInteraction {
    const channel = this.world.channels.get(channelId);
    if (!channel) throw new Error(`Discord emulator: no channel ${channelId}.`);
    const command = this.commands.find(name, channel.kind === "dm" ? undefined : this.guildId);
    if (!command)
      throw new Error(`Discord emulator: no command /${name} is registered where ${channelId} is.`);
    const { interaction, payload } = this.interactions.runCommand(channelId, userId, command, options, kind);
    this.gateway.dispatch("INTERACTION_CREATE", payload);
    this.notify();
    return interaction;
  }

  /** Every button press so far with its callbacks and follow-ups. */
  get buttonPresses(): readonly EmulatedInteraction[] {
    return this.interactions.all;
  }

  /** Dispatches an already delivered message again, as a gateway replay or duplicate would. */
  redispatch(messageId: string): void {
    const stored = this.world.message(messageId);
    if (!stored) throw new Error(`Discord emulator: no message ${messageId} to dispatch again.`);
    this.gateway.dispatch("MESSAGE_CREATE", stored.message);
  }

  /**
   * The author deletes their message: it is marked deleted and MESSAGE_DELETE (ids only, as
   * Discord sends it) is dispatched. Again for a message already deleted: the delivery is a
   * duplicate, as a gateway replay would be.
   */
  deleteUserMessage(messageId: string): void {
    const stored = this.world.message(messageId);
    if (!stored) throw new Error(`Discord emulator: no message ${messageId} to delete.`);
    stored.deleted = true;
    const { id, channel_id, guild_id } = stored.message;
    this.gateway.dispatch("MESSAGE_DELETE", { id, channel_id, ...(guild_id ? { guild_id } : {}) });
  }

  /**
   * The author edits their message: its content changes and MESSAGE_UPDATE (the whole message,
   * with `edited_timestamp`) is dispatched. `editedAtMs` defaults to now; the same time again
   * repeats the update, as a gateway replay would.
   */
  editUserMessage(messageId: string, content: string, editedAtMs = Date.now()): void {
    const stored = this.world.message(messageId);
    if (!stored) throw new Error(`Discord emulator: no message ${messageId} to edit.`);
    stored.message.content = content;
    stored.message.edited_timestamp = new Date(editedAtMs).toISOString();
    this.gateway.dispatch("MESSAGE_UPDATE", stored.message);
  }

  /** The emoji the bot shows as its reactions on `messageId`, in the order added. */
  reactionsOn(messageId: string): string[] {
    const stored = this.world.message(messageId);
    if (!stored) return [];
    return [...(this.rest.reactions.get(`${stored.message.channel_id}:${messageId}`) ?? [])];
  }

  // ── faults and limits ────────────────────────────────────────────────────────────────────────

  /** The next `times` calls of `route` fail with `fault`. */
  failNext(route: RestRoute, fault: Fault, times = 1): void {
    this.faults.failNext(route, fault, times);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  setChannelRateLimit(rule: ChannelRateLimit | null): void {
    this.rateLimiter = rule ? new ChannelRateLimiter(rule, () => this.clock.now()) : null;
  }

  /** Stop (false) or resume (true) answering heartbeats. */
  setHeartbeatAcks(enabled: boolean): void {
    this.gateway.heartbeatAcks = enabled;
  }

  /** Closes gateway connections with `code` (default 4000, which discord.js answers with RESUME). */
  dropGatewayConnections(code = 4000): void {
    this.gateway.dropConnections(code);
  }

  /** Sends op 7 RECONNECT to every connection. */
  requestReconnect(): void {
    this.gateway.requestReconnect();
  }

  /** Forgets gateway sessions: the next RESUME is refused and the client identifies anew. */
  invalidateSessions(): void {
    this.gateway.invalidateSessions();
  }

  // ── observation ──────────────────────────────────────────────────────────────────────────────

  /** Every REST call so far, oldest first. */
  get restCalls(): readonly RestCall[] {
    return this.rest.calls;
  }

  get gatewayLog(): readonly GatewayLogEntry[] {
    return this.gateway.log;
  }

  /** Gateway clients connected right now. */
  get connectedClients(): number {
    return this.gateway.liveSessionCount;
  }

  /** Number of 429 answers so far (injected or from the channel rate limit). */
  get rateLimitedCount(): number {
    return this.rest.calls.filter((call) => call.status === 429).length;
  }

  /** Messages still visible in `channelId`, oldest first, edits applied, deletes removed. */
  visibleMessages(channelId: string): GatewayMessage[] {
    return this.world.visibleMessages(channelId);
  }

  /** The message with `id` (also deleted ones), with the nonce its creator sent. */
  message(id: string): StoredMessage | undefined {
    return this.world.message(id);
  }

  /**
   * Resolves with the predicate's first truthy value, checking now and after every REST call or
   * gateway event; rejects after `timeoutMs`.
   */
  waitFor<T>(predicate: Predicate<T>, timeoutMs = 2000, description = "condition"): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        const value = predicate();
        if (!value) return false;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(value);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`Discord emulator: timed out after ${timeoutMs} ms waiting for ${description}.`));
      }, timeoutMs);
      if (!check()) this.waiters.add(check);
    });
  }

  /** Ends every gateway connection and hanging request, then stops the server. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.gateway.closeAll();
    this.rest.releaseHanging();
    await server.stop(true);
  }

  private dispatchMessage(message: GatewayMessage): GatewayMessage {
    this.gateway.dispatch("MESSAGE_CREATE", message);
    return message;
  }

  private notify(): void {
    for (const check of [...this.waiters]) check();
  }

  private async route(request: Request, server: Server<GatewaySocketData>): Promise<Response | undefined> {
    const url = new URL(request.url);
    if (url.pathname === "/gateway") {
      if (server.upgrade(request, { data: { kind: "gateway", sessionId: null } })) return undefined;
      return new Response("Expected a WebSocket upgrade", { status: 426 });
    }
    if (url.pathname.startsWith("/api/v10/")) {
      // Hanging requests must outlive Bun's idle timeout, or the server would answer for us.
      server.timeout(request, 0);
      return this.rest.handle(request, url.pathname.slice("/api/v10".length));
    }
    if (url.pathname.startsWith("/attachments/") && request.method === "GET") {
      return this.files.serve(decodeURIComponent(url.pathname.slice("/attachments/".length)));
    }
    if (url.pathname.startsWith("/__control/")) {
      return handleControl(this, request, url);
    }
    return new Response(JSON.stringify({ message: "404: Not Found", code: 0 }), {
      status: 404,
      headers: { "content-type": "application/json" },
    });
  }
}

/** Starts an emulator on a free port of 127.0.0.1. */
export function startDiscordEmulator(options: DiscordEmulatorOptions = {}): DiscordEmulator {
  return new DiscordEmulator(options).listen();
}
