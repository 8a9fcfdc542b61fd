import type { Server } from "bun";
import { type FileFault, FileHost } from "../file-host.ts";
import { AssistantBoard, type AssistantThreadState } from "./assistant-threads.ts";
import { handleControlRequest } from "./control.ts";
import {
  createTsGenerator,
  type SlackEventBuilders,
  type SlackFileInput,
  slackEventBuilders,
} from "./events.ts";
import { ChannelRateLimiter, FaultPlan } from "./faults.ts";
import { MessageBoard } from "./message-board.ts";
import { SlackOAuthApp, type SlackOAuthAppOptions, type SlackOrg } from "./oauth.ts";
import { type SocketData, SocketModeHub } from "./socket-mode.ts";
import type {
  ApiCallRecord,
  BlockActionsBody,
  EnvelopeRecord,
  EphemeralMessage,
  EventCallbackBody,
  SlackFault,
  SlackIdentity,
  SlashCommandBody,
  TokenKind,
  VisibleMessage,
} from "./types.ts";
import { waitFor } from "./wait-for.ts";
import {
  answerWebApiCall,
  type ChannelStates,
  type PendingUpload,
  rateLimited,
  type WebApiAnswer,
} from "./web-api.ts";

export interface SlackEmulatorOptions {
  /** Bot token (xoxb-) the Web API accepts. */
  botToken?: string;
  /** App-level token (xapp-) apps.connections.open accepts. */
  appToken?: string;
  identity?: Partial<SlackIdentity>;
  /** Un-acked Socket Mode envelopes are sent again after this long. Default 3000. */
  redeliveryDelayMs?: number;
  /** Redeliveries of an un-acked envelope; Slack makes 3. Default 3. */
  maxRedeliveries?: number;
  /** Minimum spacing of posts per channel before 429s; null (default) disables the limit. */
  channelRateLimitMs?: number | null;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** The app has the Agents & AI Apps feature (assistant.threads.* answer); default true. */
  assistantThreads?: boolean;
  /** The app is distributable: workspaces added with `addWorkspace` install it through OAuth v2 (oauth.ts). */
  oauth?: SlackOAuthAppOptions;
  now?: () => number;
}

export const DEFAULT_IDENTITY: SlackIdentity = {
  teamId: "T0EMULATED",
  teamName: "Switchboard Emulated",
  appId: "A0SWITCHBD",
  botUserId: "U0SWITCHBOT",
  botId: "B0SWITCHBOT",
};

/**
 * A Slack stand-in on 127.0.0.1 for Bolt and web-api: the Web API under `/api/<method>`, Socket
 * Mode over WebSocket, test controls in TypeScript and under `/__control/` for other processes.
 */
export class SlackEmulator {
  readonly identity: SlackIdentity;
  readonly botToken: string;
  readonly appToken: string;
  /** Event payload builders bound to this workspace. */
  readonly events: SlackEventBuilders;
  readonly #server: Server<SocketData>;
  readonly #calls: ApiCallRecord[] = [];
  readonly #slashCommands: SlashCommandBody[] = [];
  readonly #board: MessageBoard;
  readonly #uploads = new Map<string, PendingUpload>();
  readonly #ephemerals: EphemeralMessage[] = [];
  readonly #reactions = new Map<string, string[]>();
  readonly #assistant: AssistantBoard;
  #actionSeq = 0;
  readonly #faults = new FaultPlan();
  readonly #rateLimiter: ChannelRateLimiter;
  readonly #hub: SocketModeHub;
  readonly #channels: ChannelStates = { archived: new Set(), notIn: new Set() };
  readonly #hangingCalls = new Set<() => void>();
  readonly #now: () => number;
  /** Files served at `/files-pri/<team>-<id>/<name>` to the bot token (url_private). */
  readonly files = new FileHost();
  /** The OAuth side of a distributable app (`options.oauth`); null when the emulator has one workspace. */
  readonly oauth: SlackOAuthApp | null;
  readonly #nextTs: () => string;

  constructor(options: SlackEmulatorOptions = {}) {
    this.identity = { ...DEFAULT_IDENTITY, ...options.identity };
    this.botToken = options.botToken ?? "xoxb-1-emulator-bot-token";
    this.appToken = options.appToken ?? "xapp-1-emulator-app-token";
    this.#now = options.now ?? Date.now;
    const nextTs = createTsGenerator(this.#now);
    this.#nextTs = nextTs;
    this.oauth = options.oauth ? new SlackOAuthApp(options.oauth, this.#now) : null;
    this.events = slackEventBuilders(this.identity, nextTs);
    this.#board = new MessageBoard(this.identity, nextTs);
    this.#rateLimiter = new ChannelRateLimiter(this.#now);
    this.#rateLimiter.configure(options.channelRateLimitMs ?? null);
    this.#assistant = new AssistantBoard(options.assistantThreads ?? true);
    this.#hub = new SocketModeHub({
      identity: this.identity,
      redeliveryDelayMs: options.redeliveryDelayMs ?? 3000,
      maxRedeliveries: options.maxRedeliveries ?? 3,
      now: this.#now,
    });
    const hub = this.#hub;
    this.#server = Bun.serve<SocketData>({
      hostname: "127.0.0.1",
      port: options.port ?? 0,
      fetch: (request, server) => this.#route(request, server),
      websocket: {
        open: (socket) => hub.onOpen(socket),
        message: (_socket, message) => hub.onMessage(message),
        close: (socket) => hub.onClose(socket),
      },
    });
  }

  /** http://127.0.0.1:PORT */
  get url(): string {
    return `http://127.0.0.1:${this.#server.port}`;
  }

  /** What to pass as web-api's slackApiUrl (with the trailing slash it needs). */
  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  /**
   * A file for a message's `files`, downloadable from this emulator with the bot token (unless
   * `bytes` is absent: then its URL answers 404). `size` defaults to the bytes' length.
   */
  hostFile(file: {
    id: string;
    name: string;
    mimetype: string;
    bytes?: Uint8Array;
    size?: number;
    fault?: FileFault;
    durationMs?: number;
  }): SlackFileInput {
    const path = `${this.identity.teamId}-${file.id}/${file.name}`;
    if (file.bytes) this.files.add(file.id, file.bytes, file.fault, path);
    return {
      id: file.id,
      name: file.name,
      mimetype: file.mimetype,
      size: file.size ?? file.bytes?.byteLength ?? 0,
      url_private: `${this.url}/files-pri/${path}`,
      ...(file.durationMs === undefined ? {} : { duration_ms: file.durationMs }),
    };
  }

  // ---- OAuth (a distributable app) ----

  /** A workspace that can install the app through `/oauth/v2/authorize` (needs `options.oauth`). */
  addWorkspace(identity: Partial<SlackIdentity> & { teamId: string }): SlackIdentity {
    const workspace = { ...DEFAULT_IDENTITY, teamName: identity.teamId, ...identity };
    this.#requireOAuth().addWorkspace(workspace);
    return workspace;
  }

  /**
   * An Enterprise Grid org whose admin can install the app org-wide (the authorize page with an
   * `x-emulator-enterprise` header); its workspaces are added with `addWorkspace({ enterpriseId })`.
   */
  addEnterprise(org: SlackOrg): void {
    this.#requireOAuth().addEnterprise(org);
  }

  /**
   * Event builders for one installed workspace (its team id, app id and bot user in every body).
   * In a workspace of an org the app was installed in org-wide, the bodies name the org too, say
   * `is_enterprise_install`, and the bot is the org's. The channels they name are that
   * workspace's: another workspace's token cannot post there.
   */
  workspaceEvents(teamId: string): SlackEventBuilders {
    const oauth = this.#requireOAuth();
    const workspace = oauth.workspace(teamId);
    if (workspace === undefined) throw new Error(`Slack emulator: no workspace ${teamId}`);
    const org = workspace.enterpriseId === undefined ? undefined : oauth.enterprise(workspace.enterpriseId);
    const identity =
      org !== undefined && oauth.installedOrgWide(org.teamId)
        ? { ...org, teamId, teamName: workspace.teamName }
        : workspace;
    return slackEventBuilders(identity, this.#nextTs, (body) => {
      if (typeof body.event.channel === "string") oauth.noteChannel(body.event.channel, teamId);
    });
  }

  /**
   * Someone removed the app from `key` (a workspace, or an org it was installed in org-wide): its
   * tokens stop working, and Slack sends `tokens_revoked` then `app_uninstalled`; both bodies are
   * returned for the test to deliver. An org's bodies name the org and no workspace.
   */
  uninstallApp(key: string): { tokensRevoked: EventCallbackBody; appUninstalled: EventCallbackBody } {
    const oauth = this.#requireOAuth();
    const org = oauth.enterprise(key);
    oauth.uninstall(key);
    const events = org === undefined ? this.workspaceEvents(key) : slackEventBuilders(org, this.#nextTs);
    const bot = (org ?? oauth.workspace(key)!).botUserId;
    const eventTs = this.#nextTs();
    return {
      tokensRevoked: events.callback({
        type: "tokens_revoked",
        tokens: { oauth: [], bot: [bot] },
        event_ts: eventTs,
      }),
      appUninstalled: events.callback({ type: "app_uninstalled", event_ts: eventTs }),
    };
  }

  #requireOAuth(): SlackOAuthApp {
    if (this.oauth === null) throw new Error("Slack emulator: start it with `oauth` for installs");
    return this.oauth;
  }

  // ---- Socket Mode controls ----

  /** Sends an event over Socket Mode (queued until a client connects). Returns the envelope id. */
  pushEvent(payload: EventCallbackBody): string {
    return this.#hub.push(payload);
  }

  /**
   * The `block_actions` body of `user` pressing the button `actionId` under the bot's message
   * `ts` in `channel`. Throws unless the message carries that button, unless `forged` (a made-up
   * payload with any action_id/value).
   */
  blockAction(
    channel: string,
    ts: string,
    user: { id: string; name: string },
    actionId: string,
    options: { forged?: boolean } = {},
  ): BlockActionsBody {
    const message = this.#board.list(channel).find((m) => m.ts === ts);
    if (message === undefined) throw new Error(`Slack emulator: no message ${ts} in ${channel}`);
    const button = (message.blocks ?? [])
      .flatMap((block) =>
        block.type === "actions" ? (block.elements as Array<Record<string, unknown>>) : [],
      )
      .find((element) => element.action_id === actionId);
    if (button === undefined && !options.forged) {
      throw new Error(`Slack emulator: message ${ts} has no button with action_id ${actionId}`);
    }
    this.#actionSeq += 1;
    const actionTs = `${Math.floor(this.#now() / 1000)}.${String(this.#actionSeq).padStart(6, "0")}`;
    const { teamId, appId } = this.identity;
    return {
      type: "block_actions",
      user: { id: user.id, username: user.name, name: user.name, team_id: teamId },
      api_app_id: appId,
      token: "verification-token-unused",
      container: {
        type: "message",
        message_ts: ts,
        channel_id: channel,
        is_ephemeral: false,
        ...(message.threadTs === undefined ? {} : { thread_ts: message.threadTs }),
      },
      trigger_id: `${this.#actionSeq}.trigger`,
      team: { id: teamId, domain: "emulated" },
      enterprise: null,
      is_enterprise_install: false,
      channel: { id: channel, name: channel },
      message: {
        type: "message",
        user: message.user,
        ts: message.ts,
        text: message.text,
        ...(message.threadTs === undefined ? {} : { thread_ts: message.threadTs }),
        ...(message.blocks === undefined ? {} : { blocks: message.blocks }),
      },
      state: { values: {} },
      response_url: `${this.url}/actions/response/${this.#actionSeq}`,
      actions: [
        {
          type: "button",
          action_id: actionId,
          block_id: "actions",
          value: options.forged ? actionId : String(button?.value ?? actionId),
          text: { type: "plain_text", text: String((button?.text as { text?: string })?.text ?? "?") },
          action_ts: actionTs,
        },
      ],
    };
  }

  /**
   * The body Slack sends when `user` runs the app's slash command `command` (e.g. "/model") with
   * `text` in `channel` (a thread when `threadTs` is given); recorded in `slashCommands()`.
   */
  slashCommand(
    command: string,
    options: { user: { id: string; name: string }; channel: string; text?: string; threadTs?: string },
  ): SlashCommandBody {
    this.#actionSeq += 1;
    const { teamId, appId } = this.identity;
    const body: SlashCommandBody = {
      token: "verification-token-unused",
      team_id: teamId,
      team_domain: "emulated",
      channel_id: options.channel,
      channel_name: options.channel.startsWith("D") ? "directmessage" : options.channel.toLowerCase(),
      user_id: options.user.id,
      user_name: options.user.name,
      command,
      text: options.text ?? "",
      api_app_id: appId,
      is_enterprise_install: "false",
      response_url: `${this.url}/commands/response/${this.#actionSeq}`,
      trigger_id: `${this.#actionSeq}.${Math.floor(this.#now())}.trigger`,
      ...(options.threadTs === undefined ? {} : { thread_ts: options.threadTs }),
    };
    this.#slashCommands.push(body);
    return body;
  }

  /** Every slash command body built so far, in order. */
  slashCommands(): readonly SlashCommandBody[] {
    return this.#slashCommands;
  }

  /** Sends a slash command over Socket Mode as a `slash_commands` envelope. Returns the envelope id. */
  pushSlashCommand(body: SlashCommandBody): string {
    return this.#hub.push(body, "slash_commands");
  }

  /** Sends a button press over Socket Mode as an `interactive` envelope. Returns the envelope id. */
  pushInteraction(payload: BlockActionsBody): string {
    return this.#hub.push(payload, "interactive");
  }

  /** chat.postEphemeral messages so far (shown to one user, not in `messages()`). */
  ephemeralMessages(user?: string): EphemeralMessage[] {
    return this.#ephemerals.filter((m) => user === undefined || m.user === user);
  }

  /** Sends an envelope again now as Slack's next retry (retry_attempt + 1). */
  redeliver(envelopeId: string): void {
    this.#hub.redeliver(envelopeId);
  }

  /** Sends the identical envelope frame again. */
  duplicate(envelopeId: string): void {
    this.#hub.duplicate(envelopeId);
  }

  envelope(envelopeId: string): EnvelopeRecord | undefined {
    return this.#hub.envelope(envelopeId);
  }

  envelopes(): EnvelopeRecord[] {
    return this.#hub.envelopes();
  }

  socketConnections(): number {
    return this.#hub.connectionCount();
  }

  socketConnectionsEver(): number {
    return this.#hub.connectionsEver();
  }

  /** Sends `{type:"disconnect"}` to every Socket Mode client, which makes them reconnect. */
  requestReconnect(reason?: string): void {
    this.#hub.disconnectAll(reason);
  }

  /** Drops every Socket Mode connection abruptly. */
  dropSockets(): void {
    this.#hub.dropAll();
  }

  // ---- Web API controls ----

  /** The next `times` calls of `method` (e.g. "chat.postMessage") get `fault`. */
  failNext(method: string, fault: SlackFault, times = 1): void {
    this.#faults.add(method, fault, times);
  }

  /** Slack's ~1 post/s per channel: posts closer than `intervalMs` get 429. Null turns it off. */
  setChannelRateLimit(intervalMs: number | null): void {
    this.#rateLimiter.configure(intervalMs);
  }

  /** 429s handed out by the per-channel rate limit (for one channel, or all). */
  rateLimitRejections(channel?: string): number {
    return this.#rateLimiter.rejections(channel);
  }

  /** Marks a channel archived (is_archived) or the bot as not a member (not_in_channel). */
  setChannelState(channel: string, state: { archived?: boolean; botIsMember?: boolean }): void {
    if (state.archived !== undefined) toggle(this.#channels.archived, channel, state.archived);
    if (state.botIsMember !== undefined) toggle(this.#channels.notIn, channel, !state.botIsMember);
  }

  /** Web API calls so far, oldest first, optionally for one method. */
  calls(method?: string): ApiCallRecord[] {
    return this.#calls.filter((call) => method === undefined || call.method === method);
  }

  /** What a person sees in `channel` now (or in every channel): edits applied, deletes removed. */
  messages(channel?: string): VisibleMessage[] {
    return channel === undefined ? this.#board.all() : this.#board.list(channel);
  }

  /** The emoji names the bot shows on message `ts` of `channel` now, in the order added. */
  reactions(channel: string, ts: string): string[] {
    return [...(this.#reactions.get(`${channel}:${ts}`) ?? [])];
  }

  /**
   * Turns the app's Agents & AI Apps feature on or off. Off, every assistant.threads.* call is
   * refused with `error` (default `missing_scope`).
   */
  setAssistantFeature(enabled: boolean, error?: string): void {
    this.#assistant.setFeature(enabled, error);
  }

  /** What assistant thread `threadTs` in DM `channel` shows now; undefined before any accepted call. */
  assistantThread(channel: string, threadTs: string): AssistantThreadState | undefined {
    return this.#assistant.thread(channel, threadTs);
  }

  /** Every assistant thread an accepted call touched. */
  assistantThreads(): AssistantThreadState[] {
    return this.#assistant.all();
  }

  waitFor<T>(
    predicate: () => T | false | undefined | null,
    timeoutMs: number,
    description?: string,
  ): Promise<T> {
    return waitFor(predicate, timeoutMs, description);
  }

  /**
   * Forgets calls, messages, faults, envelopes, channel states, assistant threads (the feature goes
   * back to its state at start) and rate-limit counts.
   */
  reset(): void {
    this.#calls.length = 0;
    this.#board.clear();
    this.#ephemerals.length = 0;
    this.#slashCommands.length = 0;
    this.#reactions.clear();
    this.#assistant.clear();
    this.#faults.clear();
    this.#rateLimiter.reset();
    this.#hub.clearEnvelopes();
    this.#channels.archived.clear();
    this.#channels.notIn.clear();
  }

  /** Ends every socket and hanging call and stops the server. */
  async close(): Promise<void> {
    for (const release of this.#hangingCalls) release();
    this.#hangingCalls.clear();
    this.#hub.close();
    await this.#server.stop(true);
  }

  // ---- request handling ----

  #route(request: Request, server: Server<SocketData>): Response | Promise<Response> | undefined {
    const url = new URL(request.url);
    if (url.pathname === "/socket") {
      const data = this.#hub.redeemTicket(url.searchParams.get("ticket"));
      if (data === null) return new Response("invalid or used Socket Mode ticket", { status: 401 });
      return server.upgrade(request, { data }) ? undefined : new Response("upgrade failed", { status: 400 });
    }
    if (url.pathname === "/oauth/v2/authorize" && request.method === "GET") {
      if (this.oauth === null) return new Response("this emulator has no OAuth app", { status: 404 });
      return this.oauth.authorize(url, request);
    }
    if (url.pathname.startsWith("/api/")) return this.#handleApi(url.pathname.slice("/api/".length), request);
    if (url.pathname.startsWith("/upload/"))
      return this.#receiveUpload(url.pathname.slice("/upload/".length), request);
    if (url.pathname.startsWith("/__control/")) return handleControlRequest(this, url, request);
    if (url.pathname.startsWith("/files-pri/") && request.method === "GET") {
      // Slack answers a request without the token with its login page; a 403 says the same here.
      if (request.headers.get("authorization") !== `Bearer ${this.botToken}`)
        return new Response("not signed in", { status: 403 });
      return this.files.serve(decodeURIComponent(url.pathname.slice("/files-pri/".length)));
    }
    return new Response("not found", { status: 404 });
  }

  async #handleApi(method: string, request: Request): Promise<Response> {
    const { params, bodyToken } = await readParams(request);
    const authorization = request.headers.get("authorization");
    const token = authorization?.startsWith("Bearer ") ? authorization.slice("Bearer ".length) : bodyToken;
    const installed = this.oauth !== null && token !== undefined ? this.oauth.check(token) : null;
    const tokenKind = installed !== null ? "bot" : this.#classifyToken(authorization, bodyToken);
    const record: ApiCallRecord = {
      method,
      params,
      tokenKind,
      status: null,
      ok: false,
      atMs: this.#now(),
      ...(installed?.ok ? { teamId: installed.identity.teamId } : {}),
    };
    this.#calls.push(record);
    const oauthAnswer = this.#answerOAuth(method, params, authorization, token, installed);
    if (oauthAnswer !== null) {
      record.status = oauthAnswer.status;
      record.ok = oauthAnswer.body.ok === true;
      if (typeof oauthAnswer.body.error === "string") record.error = oauthAnswer.body.error;
      return Response.json(oauthAnswer.body, { status: oauthAnswer.status });
    }
    const identity = installed?.ok ? installed.identity : this.identity;

    const fault = this.#faults.take(method);
    if (fault !== undefined) {
      record.fault = fault.kind;
      if (fault.kind === "hang") {
        if (fault.afterEffect) answerWebApiCall(method, params, tokenKind, this.#webApiContext(identity));
        return new Promise<Response>((resolve) => {
          const release = () => resolve(new Response("emulator closed", { status: 503 }));
          this.#hangingCalls.add(release);
        });
      }
      if (fault.kind === "reset") return resetConnection();
    }
    const answer =
      fault === undefined
        ? answerWebApiCall(method, params, tokenKind, this.#webApiContext(identity))
        : faultAnswer(fault);
    record.status = answer.status;
    record.ok = answer.body.ok === true;
    if (typeof answer.body.error === "string") record.error = answer.body.error;
    const headers = { "content-type": "application/json; charset=utf-8", ...answer.headers };
    if (fault?.kind === "server_error") {
      return new Response("<html><body>upstream error</body></html>", { status: answer.status, headers: {} });
    }
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers });
  }

  /** The upload step of files.getUploadURLExternal: the bytes, POSTed raw or as a form's file. */
  async #receiveUpload(id: string, request: Request): Promise<Response> {
    const upload = this.#uploads.get(id);
    if (upload === undefined || request.method !== "POST") return new Response("not found", { status: 404 });
    const type = request.headers.get("content-type") ?? "";
    let bytes: Uint8Array;
    if (type.includes("multipart/form-data")) {
      const part = [...(await request.formData()).values()].find((v) => typeof v !== "string") as unknown as
        | File
        | undefined;
      bytes = new Uint8Array((await part?.arrayBuffer()) ?? new ArrayBuffer(0));
    } else {
      bytes = new Uint8Array(await request.arrayBuffer());
    }
    if (bytes.byteLength !== upload.length) {
      return new Response(`expected ${upload.length} bytes, got ${bytes.byteLength}`, { status: 400 });
    }
    upload.bytes = bytes;
    return new Response(`OK - ${bytes.byteLength}`, { status: 200 });
  }

  /**
   * What the OAuth app answers itself: `oauth.v2.access` (no token), a workspace token that expired
   * or was revoked, and `auth.revoke`; null for everything else.
   */
  #answerOAuth(
    method: string,
    params: Record<string, string>,
    authorization: string | null,
    token: string | undefined,
    installed: ReturnType<SlackOAuthApp["check"]>,
  ): WebApiAnswer | null {
    if (this.oauth === null) return null;
    if (method === "oauth.v2.access") return this.oauth.access(params, authorization);
    if (installed !== null && !installed.ok)
      return { status: 200, body: { ok: false, error: installed.error } };
    if (
      installed?.ok &&
      params.channel !== undefined &&
      !this.oauth.reaches(installed.identity, params.channel)
    )
      return { status: 200, body: { ok: false, error: "channel_not_found" } };
    if (method === "auth.revoke" && installed?.ok && token !== undefined) {
      this.oauth.revoke(token);
      return { status: 200, body: { ok: true, revoked: true } };
    }
    return null;
  }

  #webApiContext(identity: SlackIdentity = this.identity) {
    return {
      uploads: this.#uploads,
      uploadUrl: (id: string) => `http://127.0.0.1:${this.#server.port}/upload/${id}`,
      identity,
      board: this.#board,
      reactions: this.#reactions,
      assistant: this.#assistant,
      ephemerals: this.#ephemerals,
      rateLimiter: this.#rateLimiter,
      channels: this.#channels,
      openSocketUrl: () => `ws://127.0.0.1:${this.#server.port}/socket?ticket=${this.#hub.issueTicket()}`,
    };
  }

  #classifyToken(authorization: string | null, bodyToken: string | undefined): TokenKind {
    const token = authorization?.startsWith("Bearer ") ? authorization.slice("Bearer ".length) : bodyToken;
    if (token === undefined || token === "") return "missing";
    if (token === this.botToken) return "bot";
    if (token === this.appToken) return "app";
    return "invalid";
  }
}

function faultAnswer(fault: Exclude<SlackFault, { kind: "hang" | "reset" }>): WebApiAnswer {
  switch (fault.kind) {
    case "rate_limited":
      return rateLimited(fault.retryAfterSeconds);
    case "server_error":
      return { status: fault.status, body: { ok: false, error: `http_${fault.status}` } };
    case "platform_error":
      return { status: 200, body: { ok: false, error: fault.error } };
  }
}

/** A response whose body fails before any byte is written: Bun drops the connection (ECONNRESET). */
function resetConnection(): Response {
  const body = new ReadableStream({
    start(controller) {
      // Erroring synchronously makes Bun log the error; a microtask later it only closes the socket.
      queueMicrotask(() => controller.error(undefined));
    },
  });
  return new Response(body);
}

async function readParams(request: Request): Promise<{ params: Record<string, string>; bodyToken?: string }> {
  const contentType = request.headers.get("content-type") ?? "";
  const params: Record<string, string> = {};
  if (contentType.includes("application/json")) {
    const json: unknown = await request.json().catch(() => ({}));
    if (typeof json === "object" && json !== null) {
      for (const [key, value] of Object.entries(json)) {
        params[key] = typeof value === "string" ? value : JSON.stringify(value);
      }
    }
  } else if (contentType.includes("multipart/form-data")) {
    const form = await request.formData();
    form.forEach((value, key) => {
      params[key] = typeof value === "string" ? value : `[file ${value.name}]`;
    });
  } else {
    new URLSearchParams(await request.text()).forEach((value, key) => {
      params[key] = value;
    });
  }
  const { token, ...rest } = params;
  return token === undefined ? { params: rest } : { params: rest, bodyToken: token };
}

function toggle(set: Set<string>, value: string, on: boolean): void {
  if (on) set.add(value);
  else set.delete(value);
}

/** Starts an emulator on 127.0.0.1 (a free port unless `port` is given). */
export function startSlackEmulator(options: SlackEmulatorOptions = {}): SlackEmulator {
  return new SlackEmulator(options);
}
