/**
 * The homeserver's state: users and their access tokens, rooms with memberships, one ordered
 * stream of room events (a /sync token is a position in it), transaction ids per token, media.
 */

export interface MatrixEventJson {
  type: string;
  event_id: string;
  sender: string;
  room_id: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  state_key?: string;
  redacts?: string;
  unsigned?: Record<string, unknown>;
}

export interface StoredEvent {
  /** Position in the stream, from 1. */
  pos: number;
  event: MatrixEventJson;
}

export type Membership = "invite" | "join" | "leave";

export interface Room {
  id: string;
  members: Map<string, Membership>;
  encrypted: boolean;
  events: StoredEvent[];
}

export interface Session {
  userId: string;
  deviceId: string;
}

export interface StoredMedia {
  bytes: Uint8Array;
  contentType: string;
  filename: string | undefined;
}

export class World {
  readonly serverName: string;
  readonly users = new Map<string, { password: string; displayName: string }>();
  readonly tokens = new Map<string, Session>();
  readonly rooms = new Map<string, Room>();
  readonly stream: StoredEvent[] = [];
  /** `<token>\u0000<txnId>` → the event id the first request made. */
  readonly txns = new Map<string, string>();
  readonly media = new Map<string, StoredMedia>();
  readonly typing: Array<{ roomId: string; userId: string; typing: boolean; timeoutMs?: number }> = [];
  readonly receipts: Array<{ roomId: string; userId: string; eventId: string }> = [];
  #ids = 0;
  #waiters = new Set<() => void>();

  constructor(serverName: string) {
    this.serverName = serverName;
  }

  nextId(prefix: string): string {
    this.#ids += 1;
    return `${prefix}${this.#ids.toString(36).padStart(6, "0")}${Math.random().toString(36).slice(2, 8)}`;
  }

  /** A user whose display name is the localpart capitalised ("alice" → "Alice"). */
  createUser(localpart: string, password = `pw-${localpart}`): { userId: string; token: string } {
    const userId = `@${localpart}:${this.serverName}`;
    this.users.set(userId, { password, displayName: localpart.charAt(0).toUpperCase() + localpart.slice(1) });
    return { userId, token: this.issueToken(userId) };
  }

  issueToken(userId: string, deviceId = this.nextId("DEV")): string {
    const token = `syt_${this.nextId("")}_${Math.random().toString(36).slice(2)}`;
    this.tokens.set(token, { userId, deviceId });
    return token;
  }

  room(roomId: string): Room | undefined {
    return this.rooms.get(roomId);
  }

  createRoom(creator: string, options: { encrypted?: boolean } = {}): Room {
    const room: Room = {
      id: `!${this.nextId("r")}:${this.serverName}`,
      members: new Map(),
      encrypted: false,
      events: [],
    };
    this.rooms.set(room.id, room);
    this.append(room, { type: "m.room.create", sender: creator, state_key: "", content: { creator } });
    this.setMembership(room, creator, creator, "join");
    if (options.encrypted) this.encrypt(room, creator);
    return room;
  }

  encrypt(room: Room, sender: string): void {
    room.encrypted = true;
    this.append(room, {
      type: "m.room.encryption",
      sender,
      state_key: "",
      content: { algorithm: "m.megolm.v1.aes-sha2" },
    });
  }

  setMembership(
    room: Room,
    sender: string,
    userId: string,
    membership: Membership,
    reason?: string,
  ): StoredEvent {
    room.members.set(userId, membership);
    const displayname = membership === "join" ? this.users.get(userId)?.displayName : undefined;
    return this.append(room, {
      type: "m.room.member",
      sender,
      state_key: userId,
      content: { membership, ...(displayname ? { displayname } : {}), ...(reason ? { reason } : {}) },
    });
  }

  append(
    room: Room,
    partial: Omit<MatrixEventJson, "event_id" | "room_id" | "origin_server_ts">,
  ): StoredEvent {
    const stored: StoredEvent = {
      pos: this.stream.length + 1,
      event: {
        ...partial,
        event_id: `$${this.nextId("e")}`,
        room_id: room.id,
        origin_server_ts: Date.now(),
      },
    };
    this.stream.push(stored);
    room.events.push(stored);
    for (const wake of [...this.#waiters]) wake();
    return stored;
  }

  /** The same event again at a new position (a replay); `find` still answers the first. */
  replay(room: Room, stored: StoredEvent): void {
    const again: StoredEvent = { pos: this.stream.length + 1, event: stored.event };
    this.stream.push(again);
    room.events.push(again);
    for (const wake of [...this.#waiters]) wake();
  }

  /** The room's current state event of `type` and `stateKey`. */
  state(roomId: string, type: string, stateKey: string): MatrixEventJson | undefined {
    const events = this.rooms.get(roomId)?.events ?? [];
    return [...events].reverse().find((s) => s.event.type === type && s.event.state_key === stateKey)?.event;
  }

  find(roomId: string, eventId: string): StoredEvent | undefined {
    return this.rooms.get(roomId)?.events.find((stored) => stored.event.event_id === eventId);
  }

  /** Redacts an event as the spec says: its content is emptied and `redacted_because` says by what. */
  redact(room: Room, sender: string, eventId: string, reason?: string): StoredEvent {
    const redaction = this.append(room, {
      type: "m.room.redaction",
      sender,
      redacts: eventId,
      content: { redacts: eventId, ...(reason ? { reason } : {}) },
    });
    const target = this.find(room.id, eventId);
    if (target) {
      const keep: Record<string, unknown> =
        target.event.type === "m.room.member" ? { membership: target.event.content.membership } : {};
      target.event.content = keep;
      target.event.unsigned = { ...target.event.unsigned, redacted_because: redaction.event };
    }
    return redaction;
  }

  get position(): number {
    return this.stream.length;
  }

  /** Resolves when an event is appended or after `ms`, whichever is first. */
  waitForNews(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
      signal.addEventListener("abort", done);
    });
  }
}
