import { randomUUID } from "node:crypto";
import type { ServerWebSocket } from "bun";
import type { APIUser } from "discord.js";

/** Gateway opcodes on the wire. */
const OP = {
  dispatch: 0,
  heartbeat: 1,
  identify: 2,
  resume: 6,
  reconnect: 7,
  invalidSession: 9,
  hello: 10,
  heartbeatAck: 11,
} as const;

/** Close codes after which Discord forgets the session (a later RESUME gets op 9). */
const SESSION_ENDING_CLOSE_CODES = new Set([1000, 1001]);
const REPLAY_BUFFER_LIMIT = 1000;

export interface GatewaySocketData {
  kind: "gateway";
  sessionId: string | null;
}

export type GatewaySocket = ServerWebSocket<GatewaySocketData>;

interface DispatchFrame {
  op: 0;
  s: number;
  t: string;
  d: unknown;
}

interface Session {
  id: string;
  seq: number;
  /** Every dispatch of this session, for RESUME replay. */
  sent: DispatchFrame[];
  socket: GatewaySocket | null;
}

/** What the gateway saw and did, in order; tests read it to check identify/resume behaviour. */
export type GatewayLogEntry =
  | { event: "connected" }
  | { event: "identified"; sessionId: string }
  | { event: "identify_rejected" }
  | { event: "resumed"; sessionId: string; replayed: number }
  | { event: "resume_rejected"; sessionId: string }
  | { event: "heartbeat"; acked: boolean }
  | { event: "dispatch"; t: string; s: number; sessionId: string; live: boolean }
  /** No session existed (no client ever identified, or all closed normally): the event is gone. */
  | { event: "undelivered"; t: string }
  | { event: "closed"; code: number; sessionId: string | null };

export interface GatewayHubOptions {
  token: string;
  heartbeatIntervalMs: number;
  bot: APIUser;
  resumeUrl: () => string;
  guildIds: () => string[];
  guildCreate: () => unknown;
  onChange: () => void;
}

/**
 * The gateway side of the emulator: HELLO, IDENTIFY → READY + GUILD_CREATE, heartbeats and
 * RESUME replay, with per-session sequence numbers like Discord's.
 */
export class GatewayHub {
  /** When false, heartbeats go unanswered so the client declares the connection a zombie. */
  heartbeatAcks = true;
  readonly log: GatewayLogEntry[] = [];
  private readonly sessions = new Map<string, Session>();
  private readonly sockets = new Set<GatewaySocket>();

  constructor(private readonly options: GatewayHubOptions) {}

  /** Sessions whose client is connected right now. */
  get liveSessionCount(): number {
    return [...this.sessions.values()].filter((s) => s.socket !== null).length;
  }

  onOpen(socket: GatewaySocket): void {
    this.sockets.add(socket);
    this.record({ event: "connected" });
    this.send(socket, { op: OP.hello, d: { heartbeat_interval: this.options.heartbeatIntervalMs } });
  }

  onMessage(socket: GatewaySocket, raw: string | Buffer): void {
    let payload: { op?: unknown; d?: unknown };
    try {
      payload = JSON.parse(typeof raw === "string" ? raw : raw.toString("utf8"));
    } catch {
      socket.close(4002, "Decode error");
      return;
    }
    switch (payload.op) {
      case OP.heartbeat:
        this.record({ event: "heartbeat", acked: this.heartbeatAcks });
        if (this.heartbeatAcks) this.send(socket, { op: OP.heartbeatAck });
        return;
      case OP.identify:
        this.identify(socket, payload.d as { token?: unknown });
        return;
      case OP.resume:
        this.resume(socket, payload.d as { token?: unknown; session_id?: unknown; seq?: unknown });
        return;
      default:
        // Presence updates, member requests and voice state changes are accepted and ignored.
        return;
    }
  }

  onClose(socket: GatewaySocket, code: number): void {
    this.sockets.delete(socket);
    const sessionId = socket.data.sessionId;
    const session = sessionId === null ? undefined : this.sessions.get(sessionId);
    if (session?.socket === socket) session.socket = null;
    if (session && SESSION_ENDING_CLOSE_CODES.has(code)) this.sessions.delete(session.id);
    this.record({ event: "closed", code, sessionId });
  }

  /**
   * Sends a dispatch to every session. A session whose client is disconnected keeps the event for
   * its RESUME, as Discord does. Returns how many connected clients got it now.
   */
  dispatch(t: string, d: unknown): number {
    if (this.sessions.size === 0) this.record({ event: "undelivered", t });
    let live = 0;
    for (const session of this.sessions.values()) {
      const delivered = this.dispatchTo(session, t, d);
      if (delivered) live += 1;
    }
    return live;
  }

  /** Closes every gateway connection with `code`; the sessions stay resumable unless it is 1000/1001. */
  dropConnections(code: number): void {
    for (const socket of [...this.sockets]) socket.close(code, "Dropped by the Discord emulator");
  }

  /** Sends op 7 RECONNECT: the client closes and resumes. */
  requestReconnect(): void {
    for (const socket of this.sockets) this.send(socket, { op: OP.reconnect, d: null });
  }

  /** Forgets every session, so the next RESUME is refused with op 9 and the client identifies again. */
  invalidateSessions(): void {
    this.sessions.clear();
  }

  closeAll(): void {
    this.dropConnections(1001);
    this.sessions.clear();
  }

  private identify(socket: GatewaySocket, d: { token?: unknown }): void {
    if (d?.token !== this.options.token) {
      this.record({ event: "identify_rejected" });
      socket.close(4004, "Authentication failed");
      return;
    }
    const session: Session = { id: randomUUID().replaceAll("-", ""), seq: 0, sent: [], socket };
    this.sessions.set(session.id, session);
    socket.data.sessionId = session.id;
    this.record({ event: "identified", sessionId: session.id });
    this.dispatchTo(session, "READY", {
      v: 10,
      user: this.options.bot,
      guilds: this.options.guildIds().map((id) => ({ id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.options.resumeUrl(),
      shard: [0, 1],
      application: { id: this.options.bot.id, flags: 0 },
      user_settings: {},
      relationships: [],
      private_channels: [],
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
    });
    // Without GUILD_CREATE for each unavailable guild, discord.js waits 15 s before ClientReady.
    this.dispatchTo(session, "GUILD_CREATE", this.options.guildCreate());
  }

  private resume(socket: GatewaySocket, d: { token?: unknown; session_id?: unknown; seq?: unknown }): void {
    const sessionId = typeof d?.session_id === "string" ? d.session_id : "";
    const session = this.sessions.get(sessionId);
    if (!session || d.token !== this.options.token || typeof d.seq !== "number") {
      this.record({ event: "resume_rejected", sessionId });
      this.send(socket, { op: OP.invalidSession, d: false });
      return;
    }
    session.socket?.close(4009, "Session resumed elsewhere");
    session.socket = socket;
    socket.data.sessionId = session.id;
    const lastSeen = d.seq;
    const missed = session.sent.filter((frame) => frame.s > lastSeen);
    for (const frame of missed) this.send(socket, frame);
    this.record({ event: "resumed", sessionId: session.id, replayed: missed.length });
    this.dispatchTo(session, "RESUMED", {});
  }

  private dispatchTo(session: Session, t: string, d: unknown): boolean {
    session.seq += 1;
    const frame: DispatchFrame = { op: OP.dispatch, s: session.seq, t, d };
    session.sent.push(frame);
    if (session.sent.length > REPLAY_BUFFER_LIMIT) session.sent.shift();
    const live = session.socket !== null;
    if (session.socket) this.send(session.socket, frame);
    this.record({ event: "dispatch", t, s: frame.s, sessionId: session.id, live });
    return live;
  }

  private send(socket: GatewaySocket, payload: object): void {
    socket.send(JSON.stringify(payload));
  }

  private record(entry: GatewayLogEntry): void {
    this.log.push(entry);
    this.options.onChange();
  }
}
