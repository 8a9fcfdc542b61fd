/**
 * In-memory transcripts of browser sessions: the recent messages of each session (replayed when a
 * page connects) and the live listeners of its event stream. A session is named by its user id
 * (the id derived from the session id, user-id.ts), never by the session id. Nothing here is durable: with a
 * `history` loader (the gateway reads the store), a session that is not in memory, after a
 * restart or once evicted, is loaded again before it is used, so nothing shown is lost.
 */

export type WebRole = "user" | "assistant";

/**
 * A file shown with its message (one the agent sent, or one the user uploaded): an image inline,
 * anything else as a download. The page fetches its bytes from `/web/api/files/<id>` with the
 * session header.
 */
export interface WebFile {
  /** The blob id (sha256 of the bytes). */
  id: string;
  name: string;
  /** Sniffed from the bytes when it was stored. */
  mimeType: string;
  sizeBytes: number;
  /** "image" for a photo type the page shows inline; "file" for a download. */
  kind: "image" | "file";
}

export interface WebTranscriptEntry {
  messageId: string;
  role: WebRole;
  text: string;
  /** When the message was first shown, milliseconds since epoch. */
  atMs: number;
  /** Buttons under the message (approval prompts), by row; pressing one POSTs its data as `action`. */
  buttons?: Array<Array<{ label: string; data: string }>>;
  /** The files this message carries (its text is the caption). */
  files?: WebFile[];
}

/** What the page receives on `/web/api/stream`. A `snapshot` replaces the page's whole transcript. */
export type WebStreamEvent =
  | { type: "snapshot"; messages: WebTranscriptEntry[] }
  | ({ type: "message" } & WebTranscriptEntry)
  | { type: "edit"; messageId: string; text: string; buttons?: WebTranscriptEntry["buttons"] }
  | { type: "delete"; messageId: string }
  | { type: "typing" };

export type WebStreamListener = (event: WebStreamEvent) => void;

export interface TranscriptLimits {
  /** Messages kept per session; older ones leave the replay. */
  maxMessagesPerSession: number;
  /** Sessions kept; the least recently active one without listeners is forgotten first. */
  maxSessions: number;
}

interface Session {
  /** Insertion-ordered, so the first key is the oldest message. */
  messages: Map<string, WebTranscriptEntry>;
  /** Outbox idempotency key → the message id its first send produced. */
  sentByKey: Map<string, string>;
  listeners: Set<WebStreamListener>;
  lastActiveMs: number;
}

/** The durable transcript of the web user `userId`, oldest first (see src/gateway/web-history.ts). */
export type WebHistory = (userId: string) => Promise<WebTranscriptEntry[]>;

export class WebTranscripts {
  private readonly sessions = new Map<string, Session>();
  private readonly loading = new Map<string, Promise<void>>();

  constructor(
    private readonly limits: TranscriptLimits,
    private readonly history?: WebHistory,
  ) {}

  /**
   * Makes sure the session's durable transcript is in memory before it is read or changed. Once
   * per session while it stays in memory; concurrent callers share one load.
   */
  async load(userId: string, nowMs: number): Promise<void> {
    if (!this.history || this.sessions.has(userId)) return;
    let pending = this.loading.get(userId);
    if (!pending) {
      const history = this.history;
      pending = (async () => {
        const entries = await history(userId);
        const session = this.touch(userId, nowMs);
        // Entries that arrived while loading stay, after the durable ones they follow.
        const merged = new Map(
          entries.slice(-this.limits.maxMessagesPerSession).map((e) => [e.messageId, e]),
        );
        for (const [id, entry] of session.messages) merged.set(id, entry);
        session.messages = merged;
      })().finally(() => this.loading.delete(userId));
      this.loading.set(userId, pending);
    }
    await pending;
  }

  /** The session's recent messages, oldest first; empty for an unknown session. */
  snapshot(userId: string): WebTranscriptEntry[] {
    return [...(this.sessions.get(userId)?.messages.values() ?? [])];
  }

  /** The file `fileId` as a message of this session shows it; undefined when none does. */
  fileOf(userId: string, fileId: string): WebFile | undefined {
    for (const entry of this.sessions.get(userId)?.messages.values() ?? []) {
      const file = entry.files?.find((f) => f.id === fileId);
      if (file) return file;
    }
    return undefined;
  }

  /** The message id an earlier send with this idempotency key produced, if it is remembered. */
  sentWithKey(userId: string, idempotencyKey: string): string | undefined {
    return this.sessions.get(userId)?.sentByKey.get(idempotencyKey);
  }

  /** Adds a message unless one with its id is already there. Returns false for a repeat. */
  append(userId: string, entry: WebTranscriptEntry, idempotencyKey?: string): boolean {
    const session = this.touch(userId, entry.atMs);
    if (idempotencyKey !== undefined)
      remember(session.sentByKey, idempotencyKey, entry.messageId, 2 * this.limits.maxMessagesPerSession);
    if (session.messages.has(entry.messageId)) return false;
    session.messages.set(entry.messageId, entry);
    while (session.messages.size > this.limits.maxMessagesPerSession) {
      const oldest = session.messages.keys().next().value;
      if (oldest === undefined) break;
      session.messages.delete(oldest);
    }
    this.publish(session, { type: "message", ...entry });
    return true;
  }

  /**
   * Replaces a message's text. A message no longer remembered (evicted, or sent before a restart)
   * is shown again as a new message with the same id, so the reader still sees the final text.
   */
  edit(
    userId: string,
    messageId: string,
    text: string,
    nowMs: number,
    buttons?: WebTranscriptEntry["buttons"],
  ): void {
    const session = this.touch(userId, nowMs);
    const entry = session.messages.get(messageId);
    if (!entry) {
      this.append(userId, {
        messageId,
        role: "assistant",
        text,
        atMs: nowMs,
        ...(buttons ? { buttons } : {}),
      });
      return;
    }
    const sameButtons = JSON.stringify(entry.buttons) === JSON.stringify(buttons);
    if (entry.text === text && sameButtons) return;
    entry.text = text;
    if (buttons) entry.buttons = buttons;
    else delete entry.buttons;
    this.publish(session, { type: "edit", messageId, text, ...(buttons ? { buttons } : {}) });
  }

  /** Removes a message; an unknown one is already gone, which is what was asked. */
  delete(userId: string, messageId: string, nowMs: number): void {
    const session = this.touch(userId, nowMs);
    if (!session.messages.delete(messageId)) return;
    this.publish(session, { type: "delete", messageId });
  }

  typing(userId: string, nowMs: number): void {
    this.publish(this.touch(userId, nowMs), { type: "typing" });
  }

  /** Registers a listener and hands it the snapshot first. Returns the unsubscribe function. */
  listen(userId: string, nowMs: number, listener: WebStreamListener): () => void {
    const session = this.touch(userId, nowMs);
    listener({ type: "snapshot", messages: [...session.messages.values()] });
    session.listeners.add(listener);
    return () => session.listeners.delete(listener);
  }

  private touch(userId: string, nowMs: number): Session {
    let session = this.sessions.get(userId);
    if (session) {
      // Re-inserting keeps the map ordered by activity, oldest first.
      this.sessions.delete(userId);
    } else {
      session = { messages: new Map(), sentByKey: new Map(), listeners: new Set(), lastActiveMs: nowMs };
      this.evictIdleSessions();
    }
    session.lastActiveMs = Math.max(session.lastActiveMs, nowMs);
    this.sessions.set(userId, session);
    return session;
  }

  private evictIdleSessions(): void {
    if (this.sessions.size < this.limits.maxSessions) return;
    for (const [id, session] of this.sessions) {
      if (this.sessions.size < this.limits.maxSessions) return;
      if (session.listeners.size === 0) this.sessions.delete(id);
    }
  }

  private publish(session: Session, event: WebStreamEvent): void {
    for (const listener of session.listeners) {
      try {
        listener(event);
      } catch {
        // One broken stream must not keep the others from seeing the message.
      }
    }
  }
}

function remember(map: Map<string, string>, key: string, value: string, max: number): void {
  if (map.has(key)) return;
  map.set(key, value);
  if (map.size > max) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}
