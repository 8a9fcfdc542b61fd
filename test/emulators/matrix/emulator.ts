/**
 * A Matrix homeserver emulator on 127.0.0.1: the client-server API subset a bot uses (`url` is
 * the base to give as MATRIX_HOMESERVER_URL): password login and whoami, /sync with `since`,
 * `timeout` and a timeline limit, join, leave and invites, PUT send and redact idempotent per
 * access token and transaction id, one event, members, relations, typing, read receipts, media
 * upload and the authenticated download. Faults: M_LIMIT_EXCEEDED with retry_after_ms, 5xx,
 * refusals, an answer lost after the homeserver acted, and a /sync that never answers. Test
 * controls are methods here; users act through them as their clients would.
 */

import { resetConnection } from "../fault-plan.ts";
import { type MatrixEventJson, type Membership, type Room, type StoredEvent, World } from "./world.ts";

export type Operation =
  | "login"
  | "whoami"
  | "sync"
  | "join"
  | "leave"
  | "send"
  | "redact"
  | "event"
  | "members"
  | "messages"
  | "state"
  | "relations"
  | "typing"
  | "receipt"
  | "upload"
  | "download";

export type Fault =
  /** 429 M_LIMIT_EXCEEDED with `retry_after_ms`. */
  | { kind: "rate_limited"; retryAfterMs: number }
  | { kind: "server_error"; status: number }
  /** A Matrix error answer: e.g. 403 M_FORBIDDEN. */
  | { kind: "matrix_error"; status: number; errcode: string; error: string }
  /** The homeserver acts on the request, and its answer never comes (until the emulator closes). */
  | { kind: "answer_lost" }
  /** The homeserver acts on the request, then the connection drops mid-answer (the client sees a reset). */
  | { kind: "reset_after_effect" }
  /** The request is never answered and nothing is done (a stalled /sync). */
  | { kind: "stall" };

export interface Call {
  seq: number;
  operation: Operation;
  method: string;
  /** The path without the query. */
  path: string;
  userId: string | undefined;
  /** For send and redact: the transaction id, and whether it repeated an earlier one of the token. */
  txnId?: string;
  deduped?: boolean;
  /** For /sync: the since token asked for. */
  since?: string | null;
  body?: unknown;
  fault?: Fault["kind"];
}

/** A message as a member of the room sees it now: edits applied, redactions gone. */
export interface ShownEvent {
  eventId: string;
  sender: string;
  msgtype: string;
  body: string;
  content: Record<string, unknown>;
  /** The original event's relations (reply, thread), not the edit's. */
  relatesTo: Record<string, unknown> | undefined;
  edits: number;
}

export interface MatrixEmulatorOptions {
  serverName?: string;
  /** The bot's localpart; default "bot". */
  bot?: string;
  /** Largest upload, in bytes (m.upload.size). Default 50 MB. */
  maxUploadBytes?: number;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
}

export class MatrixEmulator {
  readonly world: World;
  readonly bot: { userId: string; password: string; token: string };
  readonly maxUploadBytes: number;
  readonly calls: Call[] = [];
  readonly #faults = new Map<Operation, Array<{ fault: Fault; eventType?: string }>>();
  readonly #held = new Set<(response: Response) => void>();
  readonly #closing = new AbortController();
  readonly #server: ReturnType<typeof Bun.serve>;

  constructor(options: MatrixEmulatorOptions = {}) {
    this.world = new World(options.serverName ?? "emulator.test");
    const localpart = options.bot ?? "bot";
    const password = `pw-${localpart}`;
    const { userId, token } = this.world.createUser(localpart, password);
    this.bot = { userId, password, token };
    this.maxUploadBytes = options.maxUploadBytes ?? 50 * 1024 * 1024;
    this.#server = Bun.serve({
      hostname: "127.0.0.1",
      port: options.port ?? 0,
      idleTimeout: 0,
      fetch: (request) => this.#handle(request),
    });
  }

  /** The homeserver URL (MATRIX_HOMESERVER_URL). */
  get url(): string {
    return `http://127.0.0.1:${this.#server.port}`;
  }

  // ---- test controls: the world ----

  createUser(localpart: string): { userId: string; token: string } {
    return this.world.createUser(localpart);
  }

  /**
   * A room `creator` made, with `members` joined and the bot invited by the creator (or joined
   * already with `botJoined`). A DM is a room of the bot and one user.
   */
  createRoom(
    creator: string,
    options: { members?: string[]; inviteBot?: boolean; botJoined?: boolean; encrypted?: boolean } = {},
  ): string {
    const room = this.world.createRoom(creator, options.encrypted ? { encrypted: true } : {});
    for (const member of options.members ?? []) this.world.setMembership(room, member, member, "join");
    if (options.botJoined) this.world.setMembership(room, this.bot.userId, this.bot.userId, "join");
    else if (options.inviteBot ?? true) this.world.setMembership(room, creator, this.bot.userId, "invite");
    return room.id;
  }

  invite(roomId: string, by: string, userId: string): void {
    this.world.setMembership(this.#room(roomId), by, userId, "invite");
  }

  join(roomId: string, userId: string): void {
    this.world.setMembership(this.#room(roomId), userId, userId, "join");
  }

  membership(roomId: string, userId: string): Membership | undefined {
    return this.world.room(roomId)?.members.get(userId);
  }

  /** Turns encryption on in a room (m.room.encryption), as a member's client would. */
  encrypt(roomId: string, by: string): void {
    this.world.encrypt(this.#room(roomId), by);
  }

  /** `sender` writes an event; returns its id. */
  sendEvent(roomId: string, sender: string, type: string, content: Record<string, unknown>): string {
    return this.world.append(this.#room(roomId), { type, sender, content }).event.event_id;
  }

  /** `sender` writes text (`m.text`); `extra` is merged into the content (mentions, relations). */
  sendText(roomId: string, sender: string, body: string, extra: Record<string, unknown> = {}): string {
    return this.sendEvent(roomId, sender, "m.room.message", { msgtype: "m.text", body, ...extra });
  }

  react(roomId: string, sender: string, eventId: string, key: string): string {
    return this.sendEvent(roomId, sender, "m.reaction", {
      "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key },
    });
  }

  redact(roomId: string, sender: string, eventId: string): string {
    return this.world.redact(this.#room(roomId), sender, eventId).event.event_id;
  }

  /**
   * Puts an event already delivered into the stream again, as a homeserver does for a client that
   * syncs from a token older than it (a replay): the same event id, at a new position.
   */
  redeliver(roomId: string, eventId: string): void {
    const stored = this.world.find(roomId, eventId);
    if (!stored) throw new Error(`no event ${eventId} in ${roomId}`);
    this.world.replay(this.#room(roomId), stored);
  }

  /** Stores media as a user's upload would; returns its mxc:// URI. */
  upload(bytes: Uint8Array, contentType: string, filename?: string): string {
    const id = this.world.nextId("m");
    this.world.media.set(id, { bytes, contentType, filename });
    return `mxc://${this.world.serverName}/${id}`;
  }

  mediaOf(mxc: string): { bytes: Uint8Array; contentType: string; filename: string | undefined } | undefined {
    const id = /^mxc:\/\/[^/]+\/(.+)$/.exec(mxc)?.[1];
    return id === undefined ? undefined : this.world.media.get(id);
  }

  // ---- test controls: reading ----

  /** Events of the room as stored (redactions applied), in order. */
  events(roomId: string): MatrixEventJson[] {
    const events = (this.world.room(roomId)?.events ?? []).map((stored) => stored.event);
    return events.filter((event, index) => events.indexOf(event) === index);
  }

  event(roomId: string, eventId: string): MatrixEventJson | undefined {
    return this.world.find(roomId, eventId)?.event;
  }

  /**
   * The messages `sender` has in the room as members see them: edits (`m.replace` by the same
   * sender) applied, redacted ones gone. `thread`: only that thread's; else only the main timeline.
   */
  shown(roomId: string, sender: string, options: { thread?: string } = {}): ShownEvent[] {
    const events = this.events(roomId);
    const shown: ShownEvent[] = [];
    for (const event of events) {
      if (event.type !== "m.room.message" || event.sender !== sender) continue;
      if (event.unsigned?.redacted_because !== undefined) continue;
      const relates = event.content["m.relates_to"] as Record<string, unknown> | undefined;
      if (relates?.rel_type === "m.replace") continue;
      const thread = relates?.rel_type === "m.thread" ? (relates.event_id as string) : undefined;
      if (thread !== options.thread) continue;
      const edits = events.filter((e) => {
        const r = e.content["m.relates_to"] as Record<string, unknown> | undefined;
        return (
          e.type === "m.room.message" &&
          e.sender === sender &&
          e.unsigned?.redacted_because === undefined &&
          r?.rel_type === "m.replace" &&
          r.event_id === event.event_id
        );
      });
      const latest = edits.at(-1);
      const content = latest ? (latest.content["m.new_content"] as Record<string, unknown>) : event.content;
      shown.push({
        eventId: event.event_id,
        sender,
        msgtype: String(content.msgtype ?? ""),
        body: String(content.body ?? ""),
        content,
        relatesTo: relates,
        edits: edits.length,
      });
    }
    return shown;
  }

  /** Reactions under an event that are not redacted: key and sender. */
  reactions(roomId: string, eventId: string): Array<{ eventId: string; key: string; sender: string }> {
    return this.events(roomId).flatMap((event) => {
      const relates = event.content["m.relates_to"] as Record<string, unknown> | undefined;
      return event.type === "m.reaction" &&
        event.unsigned?.redacted_because === undefined &&
        relates?.rel_type === "m.annotation" &&
        relates.event_id === eventId
        ? [{ eventId: event.event_id, key: String(relates.key), sender: event.sender }]
        : [];
    });
  }

  callsOf(operation: Operation): Call[] {
    return this.calls.filter((call) => call.operation === operation);
  }

  get typing() {
    return this.world.typing;
  }

  get receipts() {
    return this.world.receipts;
  }

  /**
   * The next `operation` answers with `fault` (queued in order); with `eventType`, only a send of
   * that type takes it (a reply's `m.room.message`, not a status reaction's `m.reaction`).
   */
  failNext(operation: Operation, fault: Fault, match: { eventType?: string } = {}): void {
    const queue = this.#faults.get(operation) ?? [];
    queue.push({ fault, ...match });
    this.#faults.set(operation, queue);
  }

  #takeFault(route: Route): Fault | undefined {
    const queue = this.#faults.get(route.operation);
    const eventType = route.operation === "send" ? route.params[1] : undefined;
    const index = queue?.findIndex((planned) => !planned.eventType || planned.eventType === eventType) ?? -1;
    if (index < 0) return undefined;
    return queue?.splice(index, 1)[0]?.fault;
  }

  /** Drops every queued fault. */
  clearFaults(): void {
    this.#faults.clear();
  }

  async waitFor<T>(probe: () => T | undefined | null | false, timeoutMs: number, what: string): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value) return value;
      if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
      await Bun.sleep(10);
    }
  }

  async close(): Promise<void> {
    this.#closing.abort();
    for (const answer of [...this.#held]) answer(error(503, "M_UNKNOWN", "the homeserver is shutting down"));
    this.#held.clear();
    await this.#server.stop(true);
  }

  // ---- HTTP ----

  #room(roomId: string): Room {
    const room = this.world.room(roomId);
    if (!room) throw new Error(`no room ${roomId}`);
    return room;
  }

  /** The room when `userId` has joined it. */
  #joined(roomId: string, userId: string): Room | undefined {
    const room = this.world.room(roomId);
    return room?.members.get(userId) === "join" ? room : undefined;
  }

  /** Synapse refuses a second reaction with the same key by the same sender on one event. */
  #duplicateAnnotation(room: Room, sender: string, content: Record<string, unknown>): boolean {
    const relates = content["m.relates_to"] as Record<string, unknown> | undefined;
    if (relates?.rel_type !== "m.annotation") return false;
    return this.reactions(room.id, String(relates.event_id)).some(
      (r) => r.sender === sender && r.key === relates.key,
    );
  }

  #hold(): Promise<Response> {
    return new Promise((resolve) => this.#held.add(resolve));
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const route = routeOf(request.method, url.pathname);
    if (!route)
      return error(404, "M_UNRECOGNIZED", `Unrecognized request: ${request.method} ${url.pathname}`);
    const token = (request.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    const session = this.world.tokens.get(token);
    const call: Call = {
      seq: this.calls.length + 1,
      operation: route.operation,
      method: request.method,
      path: url.pathname,
      userId: session?.userId,
    };
    this.calls.push(call);
    if (route.operation !== "login" && !session)
      return error(401, token ? "M_UNKNOWN_TOKEN" : "M_MISSING_TOKEN", "Invalid access token passed.");
    const body = await readBody(request, route.operation);
    if (body !== undefined && !(body instanceof Uint8Array)) call.body = body;
    const fault = this.#takeFault(route);
    if (fault) call.fault = fault.kind;
    if (fault?.kind === "rate_limited")
      return json(429, {
        errcode: "M_LIMIT_EXCEEDED",
        error: "Too Many Requests",
        retry_after_ms: fault.retryAfterMs,
      });
    if (fault?.kind === "server_error") return error(fault.status, "M_UNKNOWN", "Internal server error");
    if (fault?.kind === "matrix_error") return error(fault.status, fault.errcode, fault.error);
    if (fault?.kind === "stall") return await this.#hold();
    const answer = await this.#answer(
      route,
      call,
      session,
      token,
      url,
      body,
      request.headers.get("content-type"),
    );
    if (fault?.kind === "answer_lost") return await this.#hold();
    if (fault?.kind === "reset_after_effect") return resetConnection();
    return answer;
  }

  async #answer(
    route: Route,
    call: Call,
    session: { userId: string; deviceId: string } | undefined,
    token: string,
    url: URL,
    body: unknown,
    contentType: string | null,
  ): Promise<Response> {
    const [a, b, c] = route.params;
    const me = session?.userId ?? "";
    switch (route.operation) {
      case "login":
        return this.#login(body);
      case "whoami":
        return json(200, { user_id: me, device_id: session?.deviceId });
      case "sync": {
        const since = url.searchParams.get("since");
        call.since = since;
        return await this.#sync(
          me,
          since,
          Number(url.searchParams.get("timeout") ?? 0),
          url.searchParams.get("filter"),
        );
      }
      case "join": {
        const room = this.world.room(a!);
        const membership = room?.members.get(me);
        if (!room || (membership !== "invite" && membership !== "join"))
          return error(403, "M_FORBIDDEN", "You are not invited to this room.");
        if (membership !== "join") this.world.setMembership(room, me, me, "join");
        return json(200, { room_id: room.id });
      }
      case "leave": {
        const room = this.world.room(a!);
        if (room?.members.has(me) !== true) return error(404, "M_NOT_FOUND", "Unknown room");
        const reason = (body as { reason?: string } | undefined)?.reason;
        this.world.setMembership(room, me, me, "leave", reason);
        return json(200, {});
      }
      case "send":
      case "redact": {
        const room = this.#joined(a!, me);
        if (!room) return error(403, "M_FORBIDDEN", `User ${me} not in room ${a}`);
        const txnId = c!;
        call.txnId = txnId;
        const key = `${token}\u0000${route.operation}\u0000${txnId}`;
        const earlier = this.world.txns.get(key);
        if (earlier !== undefined) {
          call.deduped = true;
          return json(200, { event_id: earlier });
        }
        let stored: StoredEvent;
        if (route.operation === "send") {
          if (typeof body !== "object" || body === null)
            return error(400, "M_BAD_JSON", "Content must be a JSON object");
          if (b === "m.reaction" && this.#duplicateAnnotation(room, me, body as Record<string, unknown>))
            return error(400, "M_DUPLICATE_ANNOTATION", "Can't send same reaction twice");
          stored = this.world.append(room, {
            type: b!,
            sender: me,
            content: body as Record<string, unknown>,
          });
        } else {
          const target = this.world.find(room.id, b!);
          if (!target) return error(404, "M_NOT_FOUND", "Event not found");
          if (target.event.sender !== me)
            return error(403, "M_FORBIDDEN", "You may only redact your own events here");
          stored = this.world.redact(room, me, b!, (body as { reason?: string } | undefined)?.reason);
        }
        this.world.txns.set(key, stored.event.event_id);
        return json(200, { event_id: stored.event.event_id });
      }
      case "event": {
        const room = this.#joined(a!, me);
        if (!room) return error(403, "M_FORBIDDEN", "Not in room");
        const stored = this.world.find(room.id, b!);
        return stored ? json(200, stored.event) : error(404, "M_NOT_FOUND", "Event not found");
      }
      case "members": {
        const room = this.#joined(a!, me);
        if (!room) return error(403, "M_FORBIDDEN", "Not in room");
        const joined = Object.fromEntries(
          [...room.members]
            .filter(([, m]) => m === "join")
            .map(([userId]) => [userId, { display_name: userId }]),
        );
        return json(200, { joined });
      }
      case "state": {
        if (!this.#joined(a!, me)) return error(403, "M_FORBIDDEN", "Not in room");
        const event = this.world.state(a!, b!, c ?? "");
        return event ? json(200, event.content) : error(404, "M_NOT_FOUND", "Event not found");
      }
      case "messages": {
        const room = this.#joined(a!, me);
        if (!room) return error(403, "M_FORBIDDEN", "Not in room");
        const position = (token: string | null) => Number(/^[sp](\d+)$/.exec(token ?? "")?.[1] ?? Number.NaN);
        const from = position(url.searchParams.get("from"));
        const to = url.searchParams.has("to") ? position(url.searchParams.get("to")) : 0;
        const limit = Number(url.searchParams.get("limit") ?? 10);
        if (url.searchParams.get("dir") !== "b" || Number.isNaN(from) || Number.isNaN(to))
          return error(
            400,
            "M_INVALID_PARAM",
            "This emulator pages backwards (dir=b) between tokens it issued",
          );
        const range = room.events.filter((stored) => stored.pos > to && stored.pos <= from).reverse();
        const chunk = range.slice(0, limit);
        const last = chunk.at(-1);
        return json(200, {
          chunk: chunk.map((stored) => stored.event),
          start: `p${from}`,
          ...(range.length > limit && last ? { end: `p${last.pos - 1}` } : {}),
        });
      }
      case "relations": {
        const room = this.#joined(a!, me);
        if (!room) return error(403, "M_FORBIDDEN", "Not in room");
        const chunk = room.events
          .map((stored) => stored.event)
          .filter((event) => {
            const relates = event.content["m.relates_to"] as Record<string, unknown> | undefined;
            return relates?.event_id === b && (c === undefined || relates?.rel_type === c);
          })
          .reverse();
        return json(200, { chunk });
      }
      case "typing": {
        const typing = body as { typing?: boolean; timeout?: number };
        this.world.typing.push({
          roomId: a!,
          userId: me,
          typing: typing.typing === true,
          ...(typing.timeout === undefined ? {} : { timeoutMs: typing.timeout }),
        });
        return json(200, {});
      }
      case "receipt":
        this.world.receipts.push({ roomId: a!, userId: me, eventId: c! });
        return json(200, {});
      case "upload": {
        const bytes = body as Uint8Array;
        if (bytes.byteLength > this.maxUploadBytes)
          return error(413, "M_TOO_LARGE", `Cannot upload files larger than ${this.maxUploadBytes} bytes`);
        const id = this.world.nextId("m");
        this.world.media.set(id, {
          bytes,
          contentType: contentType ?? "application/octet-stream",
          filename: url.searchParams.get("filename") ?? undefined,
        });
        return json(200, { content_uri: `mxc://${this.world.serverName}/${id}` });
      }
      case "download": {
        const media = a === this.world.serverName ? this.world.media.get(b!) : undefined;
        if (!media) return error(404, "M_NOT_FOUND", "Not found");
        return new Response(media.bytes as Uint8Array<ArrayBuffer>, {
          headers: {
            "content-type": media.contentType,
            "content-length": String(media.bytes.byteLength),
          },
        });
      }
    }
  }

  #login(body: unknown): Response {
    const request = body as {
      type?: string;
      identifier?: { user?: string };
      password?: string;
      device_id?: string;
    };
    if (request.type !== "m.login.password") return error(400, "M_UNKNOWN", "Unknown login type");
    const given = request.identifier?.user ?? "";
    const userId = given.startsWith("@") ? given : `@${given}:${this.world.serverName}`;
    const user = this.world.users.get(userId);
    if (!user || user.password !== request.password)
      return error(403, "M_FORBIDDEN", "Invalid username or password");
    const deviceId = request.device_id ?? this.world.nextId("DEV");
    const token = this.world.issueToken(userId, deviceId);
    return json(200, {
      user_id: userId,
      access_token: token,
      device_id: deviceId,
      home_server: this.world.serverName,
    });
  }

  async #sync(
    userId: string,
    since: string | null,
    timeoutMs: number,
    filterJson: string | null,
  ): Promise<Response> {
    let from = 0;
    if (since !== null) {
      const match = /^s(\d+)$/.exec(since);
      if (!match) return error(400, "M_INVALID_PARAM", "Invalid since token");
      from = Number(match[1]);
    }
    const limit = timelineLimit(filterJson);
    let answer = this.#syncBody(userId, since === null ? null : from, limit);
    if (answer.news || timeoutMs <= 0) return json(200, answer.body);
    await this.world.waitForNews(Math.min(timeoutMs, 120_000), this.#closing.signal);
    answer = this.#syncBody(userId, from, limit);
    return json(200, answer.body);
  }

  #syncBody(userId: string, from: number | null, limit: number): { news: boolean; body: unknown } {
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    let news = false;
    for (const room of this.world.rooms.values()) {
      const membership = room.members.get(userId);
      const fresh = room.events.filter((stored) => from === null || stored.pos > from);
      if (membership === "invite") {
        const own = [...room.events]
          .reverse()
          .find((stored) => stored.event.type === "m.room.member" && stored.event.state_key === userId);
        if (own && (from === null || own.pos > from)) {
          invite[room.id] = {
            invite_state: {
              events: [
                { type: "m.room.create", sender: room.events[0]!.event.sender, state_key: "", content: {} },
                strip(own.event),
              ],
            },
          };
          news = true;
        }
      } else if (membership === "join") {
        if (from !== null && fresh.length === 0) continue;
        const timeline = fresh.slice(-limit);
        const state =
          from === null
            ? room.events
                .filter((stored) => stored.event.state_key !== undefined && !timeline.includes(stored))
                .map((stored) => stored.event)
            : [];
        join[room.id] = {
          timeline: {
            events: timeline.map((stored) => stored.event),
            limited: fresh.length > limit,
            prev_batch: `p${(timeline[0]?.pos ?? 1) - 1}`,
          },
          state: { events: state },
        };
        if (fresh.length > 0) news = true;
      }
    }
    return { news, body: { next_batch: `s${this.world.position}`, rooms: { join, invite, leave: {} } } };
  }
}

interface Route {
  operation: Operation;
  params: Array<string | undefined>;
}
const ROUTES: Array<{ method: string; pattern: RegExp; operation: Operation }> = [
  { method: "POST", pattern: /^\/_matrix\/client\/v3\/login$/, operation: "login" },
  { method: "GET", pattern: /^\/_matrix\/client\/v3\/account\/whoami$/, operation: "whoami" },
  { method: "GET", pattern: /^\/_matrix\/client\/v3\/sync$/, operation: "sync" },
  { method: "POST", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/join$/, operation: "join" },
  { method: "POST", pattern: /^\/_matrix\/client\/v3\/join\/([^/]+)$/, operation: "join" },
  { method: "POST", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/leave$/, operation: "leave" },
  {
    method: "PUT",
    pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/send\/([^/]+)\/([^/]+)$/,
    operation: "send",
  },
  {
    method: "PUT",
    pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/redact\/([^/]+)\/([^/]+)$/,
    operation: "redact",
  },
  { method: "GET", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/event\/([^/]+)$/, operation: "event" },
  { method: "GET", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/joined_members$/, operation: "members" },
  { method: "GET", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/messages$/, operation: "messages" },
  {
    method: "GET",
    pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/state\/([^/]+)\/([^/]*)$/,
    operation: "state",
  },
  {
    method: "GET",
    pattern: /^\/_matrix\/client\/v1\/rooms\/([^/]+)\/relations\/([^/]+)(?:\/([^/]+))?$/,
    operation: "relations",
  },
  { method: "PUT", pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/typing\/([^/]+)$/, operation: "typing" },
  {
    method: "POST",
    pattern: /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/receipt\/([^/]+)\/([^/]+)$/,
    operation: "receipt",
  },
  { method: "POST", pattern: /^\/_matrix\/media\/v3\/upload$/, operation: "upload" },
  {
    method: "GET",
    pattern: /^\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)$/,
    operation: "download",
  },
];

function routeOf(method: string, path: string): Route | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (match)
      return {
        operation: route.operation,
        params: match.slice(1).map((part) => (part === undefined ? undefined : decodeURIComponent(part))),
      };
  }
  return undefined;
}

async function readBody(request: Request, operation: Operation): Promise<unknown> {
  if (request.method === "GET") return undefined;
  if (operation === "upload") return new Uint8Array(await request.arrayBuffer());
  const text = await request.text();
  if (text === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function strip(event: MatrixEventJson): Record<string, unknown> {
  return { type: event.type, sender: event.sender, state_key: event.state_key, content: event.content };
}

function timelineLimit(filterJson: string | null): number {
  if (filterJson === null || !filterJson.startsWith("{")) return 10;
  try {
    const filter = JSON.parse(filterJson) as { room?: { timeline?: { limit?: number } } };
    return filter.room?.timeline?.limit ?? 10;
  } catch {
    return 10;
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function error(status: number, errcode: string, message: string): Response {
  return json(status, { errcode, error: message });
}

export function startMatrixEmulator(options: MatrixEmulatorOptions = {}): MatrixEmulator {
  return new MatrixEmulator(options);
}
