/**
 * Matrix through the client-server API with fetch (client.ts): /sync long polling from a `since`
 * token kept in the gateway's database and saved only after every event of the batch reached
 * ingress; sends with transaction ids derived from the outbox record, so a retried send shows once.
 */
import { randomUUID } from "node:crypto";
import { isSwitchboardError, SwitchboardError } from "../../src/errors.ts";
import { type Clock, systemClock } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { ChannelStateStore } from "../module.ts";
import {
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelEvents,
  type ChannelFiles,
  type ChannelLimits,
  type InboundMessage,
  type Ingress,
  isPhotoType,
  type OutgoingFile,
  type OutgoingMessage,
  type RemoteFile,
  type ReplyStatus,
  type SendReceipt,
} from "../types.ts";
import { MatrixClient, type MatrixEvent, matrixEventSchema, type SyncResponse } from "./client.ts";
import { type MatrixConfig, matrixConfigSchema } from "./config.ts";
import { escapeHtml, toMatrixContent } from "./format.ts";
import { conversationKeyOf, decodeTarget, encodeTarget, type MatrixTarget, txnIdFor } from "./keys.ts";
import { type ParseOutcome, parseMatrixEvent, replyToOf, threadRootOf } from "./parse.ts";

/** Where a prompt's buttons ride in its event: label, the press's data, and the reaction key that presses it. */
export const BUTTONS_FIELD = "org.switchboard.buttons";

export interface PromptButton {
  label: string;
  data: string;
  key: string;
}

/** Reaction keys for buttons by label; other buttons get a number. */
const KEYS_BY_LABEL: Record<string, string> = { approve: "✅", deny: "❌" };
const NUMBER_KEYS = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣"];

/** Largest upload the adapter sends (Synapse's default m.upload.size is 50 MB). */
export const MATRIX_MAX_UPLOAD_BYTES = 50 * 1024 * 1024;
/** Longest text one event carries: body and formatted_body together stay well inside 64 KiB. */
export const MATRIX_MAX_MESSAGE_CHARS = 6_000;
/** Pages of /messages read back for one room whose sync timeline was limited. */
const MAX_BACKFILL_PAGES = 10;
/** How long one typing notification shows. */
const TYPING_MS = 6_000;
/** Rooms whose DM-ness, and messages whose shape, are remembered. */
const KEPT = 5_000;

/** The status reactions (annotations): 👀 ⏳ ✅ ⚠️. */
const STATUS_KEYS: Record<ReplyStatus, string> = {
  seen: "👀",
  waiting: "⏳",
  done: "✅",
  failed: "⚠️",
};

export interface MatrixAdapterOptions {
  logger: Logger;
  clock?: Clock;
  /** The gateway's database: the sync token, the login, the rooms already told about encryption. */
  state?: ChannelStateStore;
}

/** A bounded insertion-ordered set. */
class RecentSet {
  readonly #items = new Set<string>();
  constructor(readonly max: number) {}
  add(item: string): void {
    this.#items.delete(item);
    this.#items.add(item);
    if (this.#items.size > this.max) this.#items.delete(this.#items.values().next().value!);
  }
  has(item: string): boolean {
    return this.#items.has(item);
  }
}

/** In memory, when the adapter runs without the gateway's database (tests, tools). */
function memoryState(): ChannelStateStore {
  const values = new Map<string, string>();
  return {
    loadChannelState: async (name) => values.get(name) ?? null,
    saveChannelState: async (name, value) => {
      values.set(name, value);
    },
  };
}

export class MatrixAdapter implements ChannelAdapter {
  readonly channel = "matrix" as const;
  /** PUT /send/{type}/{txnId} is idempotent per access token and txnId: a retried send shows once. */
  readonly capabilities: ChannelCapabilities = { idempotentSend: true };
  readonly limits: ChannelLimits;
  readonly markup = "matrix-html" as const;
  readonly files: ChannelFiles = {
    limits: { maxFileBytes: MATRIX_MAX_UPLOAD_BYTES, maxCaptionChars: MATRIX_MAX_MESSAGE_CHARS },
    send: (target, file) => this.#sendFile(target, file),
  };

  readonly #config: MatrixConfig;
  readonly #client: MatrixClient;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #state: ChannelStateStore;
  readonly #persistent: boolean;
  #userId: string;
  #ingress: Ingress | undefined;
  #events: ChannelEvents = {};
  #since: string | null = null;
  #running = false;
  #connected = false;
  #abort = new AbortController();
  #loop: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Rooms with the bot and one other member, by room id; dropped when a membership changes. */
  readonly #dm = new Map<string, boolean>();
  /** Members' display names by room (null: none set); a room's are dropped when a membership changes. */
  readonly #names = new Map<string, Map<string, string | null>>();
  /** Rooms already told that encrypted rooms are not supported (kept in the database). */
  #refusedRooms = new Set<string>();
  /** Events this adapter redacted: an edit of one is refused as the platforms refuse it. */
  readonly #redacted = new RecentSet(KEPT);
  /** Messages this process sent without buttons: their edits have no reactions to take away. */
  readonly #plain = new RecentSet(KEPT);

  constructor(config: MatrixConfig, options: MatrixAdapterOptions) {
    this.#config = config;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#persistent = options.state !== undefined;
    this.#state = options.state ?? memoryState();
    this.#userId = config.userId ?? "";
    this.#client = new MatrixClient({
      homeserverUrl: config.homeserverUrl,
      ...(config.accessToken === undefined ? {} : { accessToken: config.accessToken }),
      requestTimeoutMs: config.requestTimeoutMs,
    });
    this.limits = {
      maxMessageChars: MATRIX_MAX_MESSAGE_CHARS,
      perChatIntervalMs: 200,
      perAccountPerSecond: 10,
      editIntervalMs: config.editIntervalMs,
    };
  }

  /** The bot's user id: configured, or learnt from whoami when start() resolves. */
  get account(): string {
    if (this.#userId === "")
      throw new Error("MatrixAdapter.account is known only after start() resolves (or set MATRIX_USER_ID).");
    return this.#userId;
  }

  async start(ingress: Ingress, events: ChannelEvents = {}): Promise<void> {
    this.#ingress = ingress;
    this.#events = events;
    this.#abort = new AbortController();
    if (!this.#persistent)
      this.#logger.warn("matrix.state_in_memory", {
        hint: "the sync token is kept in memory only: a restart starts from the homeserver's present",
      });
    await this.#authenticate();
    this.#since = await this.#state.loadChannelState(this.#stateName("since"));
    this.#refusedRooms = new Set(
      JSON.parse((await this.#state.loadChannelState(this.#stateName("refused-rooms"))) ?? "[]") as string[],
    );
    if (this.#since === null) await this.#firstSync();
    this.#running = true;
    this.#connected = true;
    this.#loop = this.#syncLoop();
    this.#logger.info("matrix.started", { userId: this.#userId, resumed: this.#since !== null });
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#abort.abort();
    await this.#loop?.catch(() => undefined);
    this.#loop = undefined;
    this.#connected = false;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  isConnected(): boolean {
    return this.#connected;
  }

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const { roomId, threadRoot } = decodeTarget(target);
    const buttons = promptButtons(message.buttons);
    const content: Record<string, unknown> = {
      ...toMatrixContent(withLegend(message.text, buttons, message.format), message.format),
      ...relation({ roomId, ...(threadRoot === undefined ? {} : { threadRoot }) }, message.replyTo),
      ...(buttons.length > 0 ? { [BUTTONS_FIELD]: buttons } : {}),
    };
    const eventId = await this.#client.send(
      roomId,
      "m.room.message",
      txnIdFor(message.idempotencyKey),
      content,
    );
    // Derived from the same key: a send retried after a failure here adds each reaction once.
    for (const [index, button] of buttons.entries())
      await this.#react(roomId, eventId, button.key, txnIdFor(message.idempotencyKey, `react${index}`));
    if (buttons.length === 0) this.#plain.add(eventId);
    return { messageIds: [eventId] };
  }

  /** Replaces the message's content (`m.replace`); without buttons, the bot's reactions under it go. */
  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const { roomId } = decodeTarget(target);
    if (this.#redacted.has(messageId))
      throw new SwitchboardError(
        "platform_rejected",
        `The Matrix message ${messageId} was deleted; it cannot be edited.`,
        {
          details: { platform: "matrix", operation: "edit", eventId: messageId },
        },
      );
    const buttons = promptButtons(message.buttons);
    const newContent: Record<string, unknown> = {
      ...toMatrixContent(withLegend(message.text, buttons, message.format), message.format),
      ...(buttons.length > 0 ? { [BUTTONS_FIELD]: buttons } : {}),
    };
    const fallback = toMatrixContent(
      `* ${withLegend(message.text, buttons, message.format)}`,
      message.format,
    );
    await this.#client.send(roomId, "m.room.message", `sb.edit.${randomUUID()}`, {
      ...fallback,
      "m.new_content": newContent,
      "m.relates_to": { rel_type: "m.replace", event_id: messageId },
    });
    if (buttons.length > 0) await this.#ensureReactions(roomId, messageId, buttons);
    else if (!this.#plain.has(messageId)) await this.#removeOwnReactions(roomId, messageId);
  }

  /** Redacts the message; redacting it again is accepted by the homeserver. */
  async delete(target: string, messageId: string): Promise<void> {
    const { roomId } = decodeTarget(target);
    await this.#client.redact(roomId, messageId, `sb.redact.${randomUUID()}`);
    this.#redacted.add(messageId);
  }

  /**
   * Annotates the message with the status, then redacts the bot's annotations of `previous` (one
   * read of the message's annotations). The homeserver refuses a second equal annotation: the
   * status is shown already.
   */
  async react(
    target: string,
    messageId: string,
    status: ReplyStatus,
    previous: readonly ReplyStatus[],
  ): Promise<void> {
    const { roomId } = decodeTarget(target);
    await this.#react(roomId, messageId, STATUS_KEYS[status], `sb.status.${randomUUID()}`).catch((error) => {
      if (
        !isSwitchboardError(error, "platform_rejected") ||
        error.details?.errcode !== "M_DUPLICATE_ANNOTATION"
      )
        throw error;
    });
    const keys = new Set(previous.filter((shown) => shown !== status).map((shown) => STATUS_KEYS[shown]));
    if (keys.size === 0) return;
    for (const reaction of await this.#client.relations(roomId, messageId, "m.annotation"))
      if (
        reaction.sender === this.#userId &&
        reaction.event_id !== undefined &&
        reaction.unsigned?.redacted_because === undefined &&
        keys.has(String(record(reaction.content["m.relates_to"])?.key))
      )
        await this.#client.redact(roomId, reaction.event_id, `sb.redact.${randomUUID()}`);
  }

  async typing(target: string): Promise<void> {
    await this.#client.typing(decodeTarget(target).roomId, this.#userId, true, TYPING_MS);
  }

  openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
    return this.#client.download(ref, signal);
  }

  // ---- sending helpers ----

  async #sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const { roomId, threadRoot } = decodeTarget(target);
    const url = await this.#client.upload(file.bytes, file.mimeType, file.filename);
    const msgtype = isPhotoType(file.mimeType)
      ? "m.image"
      : file.mimeType.startsWith("video/")
        ? "m.video"
        : file.mimeType.startsWith("audio/")
          ? "m.audio"
          : "m.file";
    const caption = file.caption === "" ? undefined : toMatrixContent(file.caption, file.format, msgtype);
    const content = {
      msgtype,
      body: caption?.body ?? file.filename,
      ...(caption?.formatted_body === undefined
        ? {}
        : { format: caption.format, formatted_body: caption.formatted_body }),
      filename: file.filename,
      url,
      info: { mimetype: file.mimeType, size: file.bytes.byteLength },
      ...relation({ roomId, ...(threadRoot === undefined ? {} : { threadRoot }) }, file.replyTo),
    };
    const eventId = await this.#client.send(roomId, "m.room.message", txnIdFor(file.idempotencyKey), content);
    this.#plain.add(eventId);
    return { messageIds: [eventId] };
  }

  async #react(roomId: string, eventId: string, key: string, txnId: string): Promise<void> {
    await this.#client.send(roomId, "m.reaction", txnId, {
      "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key },
    });
  }

  /** The bot's reaction for each button, added where missing (a homeserver refuses a second one). */
  async #ensureReactions(roomId: string, eventId: string, buttons: PromptButton[]): Promise<void> {
    const present = new Set(
      (await this.#client.relations(roomId, eventId, "m.annotation"))
        .filter((r) => r.sender === this.#userId && r.unsigned?.redacted_because === undefined)
        .map((r) => record(r.content["m.relates_to"])?.key),
    );
    for (const button of buttons)
      if (!present.has(button.key))
        await this.#react(roomId, eventId, button.key, `sb.react.${randomUUID()}`);
  }

  async #removeOwnReactions(roomId: string, eventId: string): Promise<void> {
    const reactions = await this.#client.relations(roomId, eventId, "m.annotation");
    for (const reaction of reactions)
      if (
        reaction.sender === this.#userId &&
        reaction.event_id !== undefined &&
        reaction.unsigned?.redacted_because === undefined
      )
        await this.#client.redact(roomId, reaction.event_id, `sb.redact.${randomUUID()}`);
  }

  // ---- session ----

  /** The bot's user id where conversation keys carry it (a named account's), else undefined. */
  #keyAccount(): string | undefined {
    return this.#config.accountKeys ? this.#userId : undefined;
  }

  #stateName(what: string): string {
    return `matrix:${this.#userId}:${what}`;
  }

  /** The access token: configured, or kept from an earlier login, or a new login kept for next time. */
  async #authenticate(): Promise<void> {
    if (this.#config.accessToken !== undefined) {
      const me = await this.#client.whoami();
      if (this.#config.userId !== undefined && this.#config.userId !== me.userId)
        throw new SwitchboardError(
          "config_invalid",
          `MATRIX_USER_ID is ${this.#config.userId}, but MATRIX_ACCESS_TOKEN belongs to ${me.userId}. Set the bot's own id, or leave MATRIX_USER_ID unset.`,
        );
      this.#userId = me.userId;
      return;
    }
    const userId = this.#config.userId!;
    this.#userId = userId;
    const kept = await this.#state.loadChannelState(this.#stateName("session"));
    if (kept !== null) {
      const session = JSON.parse(kept) as { accessToken: string; deviceId: string };
      this.#client.accessToken = session.accessToken;
      try {
        await this.#client.whoami();
        return;
      } catch (error) {
        if (!(error instanceof SwitchboardError && error.code === "unauthorized")) throw error;
        this.#logger.warn("matrix.session_expired", {
          userId,
          deviceId: session.deviceId,
          hint: "logging in again",
        });
      }
    }
    const session = await this.#client.login(userId, this.#config.password!);
    this.#client.accessToken = session.accessToken;
    await this.#state.saveChannelState(
      this.#stateName("session"),
      JSON.stringify({ accessToken: session.accessToken, deviceId: session.deviceId }),
      this.#clock.now(),
    );
    this.#logger.info("matrix.logged_in", { userId: session.userId, deviceId: session.deviceId });
  }

  // ---- receiving ----

  #filter(): unknown {
    return {
      room: { timeline: { limit: this.#config.timelineLimit }, state: { lazy_load_members: true } },
      presence: { not_types: ["*"] },
      account_data: { not_types: ["*"] },
    };
  }

  /**
   * The first sync of this bot on this database: invites are answered, but what was written
   * before the gateway first ran is history, not new messages; the token marks where they begin.
   */
  async #firstSync(): Promise<void> {
    const batch = await this.#client.sync({
      since: null,
      timeoutMs: 0,
      filter: this.#filter(),
      deadlineMs: this.#config.requestTimeoutMs,
      signal: this.#abort.signal,
    });
    await this.#handleInvites(batch);
    const skipped = Object.values(batch.rooms.join).reduce((n, room) => n + room.timeline.events.length, 0);
    await this.#advance(batch.next_batch);
    this.#logger.info("matrix.first_sync", {
      rooms: Object.keys(batch.rooms.join).length,
      historySkipped: skipped,
    });
  }

  async #syncLoop(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      let batch: SyncResponse;
      const asked = performance.now();
      const deadlineMs = this.#config.syncTimeoutMs + this.#config.syncStallMarginMs;
      try {
        batch = await this.#client.sync({
          since: this.#since,
          timeoutMs: this.#config.syncTimeoutMs,
          filter: this.#filter(),
          deadlineMs,
          signal: this.#abort.signal,
        });
      } catch (error) {
        if (!this.#running) return;
        if (
          error instanceof SwitchboardError &&
          error.code === "platform_timeout" &&
          performance.now() - asked >= deadlineMs
        ) {
          // No answer past its own timeout: a stalled connection, restarted at once (as Telegram's poll).
          // A connection that broke early is a failure like any other, and waits before the next try.
          this.#logger.warn("matrix.sync_stalled", { afterMs: deadlineMs });
          continue;
        }
        failures += 1;
        this.#connected = !(error instanceof SwitchboardError && error.code === "unauthorized");
        this.#logger.warn("matrix.sync_failed", { error: describe(error), attempt: failures });
        await this.#pause(this.#retryDelay(error, failures));
        continue;
      }
      this.#connected = true;
      try {
        await this.#handleBatch(batch, this.#since, performance.now());
      } catch (error) {
        if (!this.#running) return;
        failures += 1;
        // Not advanced: the same batch comes again; what was admitted is found by its event id.
        this.#logger.warn("matrix.batch_refused", { error: describe(error), attempt: failures });
        await this.#pause(this.#retryDelay(error, failures));
        continue;
      }
      failures = 0;
      await this.#advance(batch.next_batch);
    }
  }

  async #advance(nextBatch: string): Promise<void> {
    this.#since = nextBatch;
    try {
      await this.#state.saveChannelState(this.#stateName("since"), nextBatch, this.#clock.now());
    } catch (error) {
      // The batch is admitted; a restart before the next save fetches it again and finds duplicates.
      this.#logger.warn("matrix.since_not_saved", { error: describe(error) });
    }
  }

  #retryDelay(error: unknown, failures: number): number {
    const delays = this.#config.syncRetryDelaysMs;
    const base = delays[Math.min(failures - 1, delays.length - 1)]!;
    return error instanceof SwitchboardError && error.retryAfterMs !== undefined
      ? Math.max(base, error.retryAfterMs)
      : base;
  }

  /** Waits `ms`, or less when the adapter stops. */
  #pause(ms: number): Promise<void> {
    return this.#clock.sleep(ms, this.#abort.signal).catch(() => {});
  }

  async #handleBatch(batch: SyncResponse, since: string | null, arrivedAtMs: number): Promise<void> {
    await this.#handleInvites(batch);
    for (const [roomId, room] of Object.entries(batch.rooms.join)) {
      const missed =
        room.timeline.limited && since !== null && room.timeline.prev_batch !== undefined
          ? await this.#backfill(roomId, room.timeline.prev_batch, since)
          : [];
      const timeline = [...missed, ...room.timeline.events];
      const events = [...room.state.events, ...timeline].flatMap((raw) => {
        const parsed = matrixEventSchema.safeParse(raw);
        return parsed.success ? [parsed.data] : [];
      });
      if (events.some((event) => event.type === "m.room.member")) {
        this.#dm.delete(roomId);
        this.#names.delete(roomId);
      }
      const encryption = events.find((event) => event.type === "m.room.encryption");
      if (encryption !== undefined) await this.#refuseEncrypted(roomId, encryption.sender ?? "");
      for (const raw of timeline) {
        const parsed = matrixEventSchema.safeParse(raw);
        if (!parsed.success) {
          this.#logger.warn("matrix.event_malformed", { roomId, problem: parsed.error.issues[0]?.message });
          continue;
        }
        await this.#receive(roomId, parsed.data, arrivedAtMs);
      }
    }
  }

  /**
   * The events a limited timeline left out (more arrived in the room than the sync filter's
   * limit), read back with /messages from the timeline's start to the token asked with, oldest
   * first. Bounded: past MAX_BACKFILL_PAGES pages the rest is logged as a gap.
   */
  async #backfill(roomId: string, from: string, to: string): Promise<unknown[]> {
    const pages: unknown[][] = [];
    let next: string | undefined = from;
    for (let page = 0; next !== undefined; page += 1) {
      if (page === MAX_BACKFILL_PAGES) {
        this.#logger.warn("matrix.timeline_gap", {
          roomId,
          read: pages.flat().length,
          hint: "more events arrived in this room while the gateway was away than it reads back; the oldest were not read",
        });
        break;
      }
      const answer = await this.#client.messages(roomId, {
        from: next,
        to,
        limit: this.#config.timelineLimit,
      });
      pages.push(answer.chunk);
      next = answer.chunk.length === 0 ? undefined : answer.end;
    }
    const missed = pages.flat().reverse();
    this.#logger.info("matrix.backfilled", { roomId, events: missed.length });
    return missed;
  }

  async #handleInvites(batch: SyncResponse): Promise<void> {
    for (const [roomId, invite] of Object.entries(batch.rooms.invite)) {
      const own = invite.invite_state.events
        .map((raw) => matrixEventSchema.safeParse(raw))
        .find(
          (parsed) =>
            parsed.success &&
            parsed.data.type === "m.room.member" &&
            parsed.data.state_key === this.#userId &&
            parsed.data.content.membership === "invite",
        );
      const inviter = own?.success ? own.data.sender : undefined;
      const policy = this.#config.invites;
      const allowed = policy.kind === "everyone" || (inviter !== undefined && policy.ids.includes(inviter));
      if (allowed) {
        await this.#client.join(roomId);
        this.#dm.delete(roomId);
        this.#logger.info("matrix.invite_joined", { roomId, inviter });
      } else {
        await this.#client.leave(
          roomId,
          "This bot only joins rooms its operator allowed (MATRIX_ALLOWED_USERS).",
        );
        this.#logger.warn("matrix.invite_declined", {
          roomId,
          inviter,
          reason: "the inviter is not in MATRIX_ALLOWED_USERS",
        });
        this.#events.ignored?.("invite_not_allowed");
      }
    }
  }

  /** The member's display name in the room, looked up once per room and member. */
  async #nameOf(roomId: string, userId: string): Promise<string | undefined> {
    let room = this.#names.get(roomId);
    const known = room?.get(userId);
    if (known !== undefined) return known ?? undefined;
    let name: string | null;
    try {
      name = (await this.#client.displayName(roomId, userId)) ?? null;
    } catch (error) {
      if (error instanceof SwitchboardError && error.retryable) throw error;
      name = null;
    }
    if (room === undefined) {
      if (this.#names.size >= KEPT) this.#names.clear();
      room = new Map();
      this.#names.set(roomId, room);
    }
    room.set(userId, name);
    return name ?? undefined;
  }

  async #isDm(roomId: string): Promise<boolean> {
    const known = this.#dm.get(roomId);
    if (known !== undefined) return known;
    const members = await this.#client.joinedMembers(roomId);
    const dm = members.length === 2 && members.includes(this.#userId);
    if (this.#dm.size >= KEPT) this.#dm.clear();
    this.#dm.set(roomId, dm);
    return dm;
  }

  async #receive(roomId: string, event: MatrixEvent, arrivedAtMs: number): Promise<void> {
    const ingress = this.#ingress;
    if (ingress === undefined)
      throw new SwitchboardError("runtime_closed", "The Matrix adapter is not started");
    if (event.sender === this.#userId) return;
    if (
      event.type !== "m.room.message" &&
      event.type !== "m.reaction" &&
      event.type !== "m.room.encrypted" &&
      event.type !== "m.room.redaction"
    )
      return;
    const isDm = await this.#isDm(roomId);
    let repliedToSender: string | undefined;
    const replyTo = replyToOf(event.content);
    if (!isDm && replyTo !== undefined) repliedToSender = await this.#senderOf(roomId, replyTo);
    const senderName =
      event.type === "m.room.message" && event.sender !== undefined
        ? await this.#nameOf(roomId, event.sender)
        : undefined;
    const parsed: ParseOutcome = parseMatrixEvent(event, {
      account: this.#userId,
      accountKeys: this.#config.accountKeys,
      roomId,
      isDm,
      ...(repliedToSender === undefined ? {} : { repliedToSender }),
      ...(senderName === undefined ? {} : { senderName }),
    });
    switch (parsed.kind) {
      case "skip":
        this.#logger.debug("matrix.event_skipped", {
          roomId,
          eventId: event.event_id,
          reason: parsed.reason,
        });
        return;
      case "encrypted":
        await this.#refuseEncrypted(roomId, parsed.sender);
        return;
      case "reaction":
        await this.#press(roomId, parsed, ingress, arrivedAtMs);
        return;
      case "message": {
        const outcome = await ingress(parsed.message, { arrivedAtMs });
        if (outcome.kind === "admitted")
          this.#background("read_receipt", this.#client.readReceipt(roomId, parsed.message.updateKey));
        return;
      }
    }
  }

  async #senderOf(roomId: string, eventId: string): Promise<string | undefined> {
    try {
      return (await this.#client.event(roomId, eventId)).sender;
    } catch (error) {
      if (error instanceof SwitchboardError && !error.retryable) return undefined;
      throw error;
    }
  }

  /** A reaction on a prompt of the bot's: a press of the button its key names. Others are skipped. */
  async #press(
    roomId: string,
    reaction: Extract<ParseOutcome, { kind: "reaction" }>,
    ingress: Ingress,
    arrivedAtMs: number,
  ): Promise<void> {
    let prompt: MatrixEvent;
    try {
      prompt = await this.#client.event(roomId, reaction.reactsTo);
    } catch (error) {
      if (error instanceof SwitchboardError && !error.retryable) return;
      throw error;
    }
    const buttons = parseButtons(prompt.content[BUTTONS_FIELD]);
    const button = buttons.find((b) => b.key === reaction.key || b.label === reaction.key);
    if (button === undefined) {
      this.#logger.debug("matrix.event_skipped", {
        roomId,
        eventId: reaction.eventId,
        reason: "a reaction, not on a button",
      });
      return;
    }
    const threadRoot = threadRootOf(prompt.content);
    const target = encodeTarget({ roomId, ...(threadRoot === undefined ? {} : { threadRoot }) });
    const isDm = await this.#isDm(roomId);
    const senderName = await this.#nameOf(roomId, reaction.sender);
    const message: InboundMessage = {
      channel: "matrix",
      account: this.#userId,
      updateKey: reaction.eventId,
      principal: {
        id: reaction.sender,
        ...(senderName === undefined ? {} : { name: senderName }),
        isBot: false,
      },
      conversationKey: conversationKeyOf(
        { roomId, ...(threadRoot === undefined ? {} : { threadRoot }) },
        this.#keyAccount(),
      ),
      ...(threadRoot === undefined ? {} : { roomKey: conversationKeyOf({ roomId }, this.#keyAccount()) }),
      replyTarget: target,
      surface: threadRoot !== undefined ? "thread" : isDm ? "dm" : "group",
      text: "",
      messageId: reaction.eventId,
      addressedToBot: true,
      attachments: [],
      receivedAtMs: this.#clock.now(),
      action: { data: button.data, interactionId: reaction.eventId },
    };
    const outcome = await ingress(message, { arrivedAtMs });
    if (outcome.kind === "action" && outcome.notice !== "") {
      const content = {
        ...toMatrixContent(outcome.notice, "plain", "m.notice"),
        ...relation({ roomId, ...(threadRoot === undefined ? {} : { threadRoot }) }, reaction.reactsTo),
      };
      // Keyed by the reaction: a press handled again after a restart shows its notice once.
      this.#background(
        "press_notice",
        this.#client.send(roomId, "m.room.message", txnIdFor(reaction.eventId, "notice"), content),
      );
    }
  }

  /**
   * Encrypted rooms are refused, once per room: a notice there, a log line and a metric. The
   * rooms told are kept in the database, so a restart does not tell them again.
   */
  async #refuseEncrypted(roomId: string, sender: string): Promise<void> {
    this.#events.ignored?.("encrypted_room");
    if (this.#refusedRooms.has(roomId)) return;
    this.#logger.warn("matrix.encrypted_room_refused", {
      roomId,
      sender,
      reason: "end-to-end encrypted rooms are not supported: the bot cannot read them",
      hint: "talk to the bot in a room without encryption (encryption cannot be turned off in a room; create a new one)",
    });
    await this.#client.send(roomId, "m.room.message", txnIdFor(`encrypted-refusal.${roomId}`), {
      msgtype: "m.notice",
      body: "This room is end-to-end encrypted, and this bot does not support encrypted rooms yet: it cannot read what is written here. Please talk to it in a room without encryption.",
    });
    this.#refusedRooms.add(roomId);
    await this.#state.saveChannelState(
      this.#stateName("refused-rooms"),
      JSON.stringify([...this.#refusedRooms]),
      this.#clock.now(),
    );
  }

  /** Work whose failure changes nothing durable: logged, and awaited by stop(). */
  #background(what: string, work: Promise<unknown>): void {
    this.#inFlight.add(work);
    void work.then(
      () => this.#inFlight.delete(work),
      (error: unknown) => {
        this.#inFlight.delete(work);
        this.#logger.warn(`matrix.${what}_failed`, { error: describe(error) });
      },
    );
  }
}

/** Validates `config` against the channel's schema and builds the adapter. */
export function createMatrixAdapter(config: unknown, options: MatrixAdapterOptions): MatrixAdapter {
  const parsed = matrixConfigSchema.safeParse(config);
  if (!parsed.success)
    throw new SwitchboardError(
      "config_invalid",
      `Invalid Matrix configuration: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return new MatrixAdapter(parsed.data, options);
}

/** The buttons of a prompt with the reaction key of each. */
function promptButtons(rows: OutgoingMessage["buttons"]): PromptButton[] {
  const buttons = rows?.flat() ?? [];
  let numbered = 0;
  const used = new Set<string>();
  return buttons.map((button) => {
    let key = KEYS_BY_LABEL[button.label.trim().toLowerCase()];
    if (key === undefined || used.has(key)) key = NUMBER_KEYS[numbered++] ?? button.label;
    used.add(key);
    return { label: button.label, data: button.data, key };
  });
}

function parseButtons(value: unknown): PromptButton[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    const b = item as Partial<PromptButton> | null;
    return b && typeof b.label === "string" && typeof b.data === "string" && typeof b.key === "string"
      ? [{ label: b.label, data: b.data, key: b.key }]
      : [];
  });
}

/** The prompt's text with a line saying which reaction presses which button. */
function withLegend(text: string, buttons: PromptButton[], format: "rich" | "plain"): string {
  if (buttons.length === 0) return text;
  const legend = buttons
    .map((b) => `${b.key} ${format === "rich" ? escapeHtml(b.label) : b.label}`)
    .join(" · ");
  return text === "" ? legend : `${text}\n\n${legend}`;
}

/** A message's place: in a thread (falling back to a reply for clients without threads), or a reply. */
function relation(target: MatrixTarget, replyTo: string | undefined): Record<string, unknown> {
  if (target.threadRoot !== undefined)
    return {
      "m.relates_to": {
        rel_type: "m.thread",
        event_id: target.threadRoot,
        is_falling_back: replyTo === undefined,
        "m.in_reply_to": { event_id: replyTo ?? target.threadRoot },
      },
    };
  return replyTo === undefined ? {} : { "m.relates_to": { "m.in_reply_to": { event_id: replyTo } } };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
