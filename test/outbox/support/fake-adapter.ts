import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelFiles,
  ChannelLimits,
  ChannelName,
  FileLimits,
  MarkupDialect,
  OutgoingFile,
  OutgoingMessage,
  SendReceipt,
} from "../../../channels/types.ts";
import { SwitchboardError } from "../../../src/errors.ts";
import type { Clock } from "../../../src/util/clock.ts";

export type Operation = "send" | "file" | "edit" | "delete" | "typing";

/**
 * What one scripted call does instead of succeeding. `hang` never answers; `reached` says whether
 * the platform acted on it anyway (the case that makes a blind resend a duplicate).
 */
export type Effect = { kind: "ok" } | { kind: "fail"; error: Error } | { kind: "hang"; reached: boolean };

export interface CallRecord {
  op: Operation;
  atMs: number;
  target: string;
  messageId?: string;
  text?: string;
  format?: "rich" | "plain";
  replyTo?: string;
  idempotencyKey?: string;
  /** `file` calls: what was uploaded. */
  file?: { filename: string; mimeType: string; bytes: Uint8Array };
  outcome: "ok" | "error" | "hang";
}

interface ChatMessage {
  id: string;
  text: string;
  format: "rich" | "plain";
  idempotencyKey: string;
}

export const rateLimited = (retryAfterMs: number, global = false) =>
  new SwitchboardError("platform_rate_limited", `429 Too Many Requests: retry after ${retryAfterMs / 1000}`, {
    retryable: true,
    retryAfterMs,
    details: { global },
  });
export const unavailable = () =>
  new SwitchboardError("platform_unavailable", "500 Internal Server Error", { retryable: true });
export const formattingRejected = () =>
  new SwitchboardError("platform_rejected", "400 Bad Request: can't parse entities: unsupported start tag", {
    rejection: "markup",
  });
export const rejected = (reason: string) =>
  new SwitchboardError("platform_rejected", `400 Bad Request: ${reason}`);
export const notModified = () =>
  new SwitchboardError("platform_rejected", "400 Bad Request: message is not modified", {
    rejection: "unchanged",
  });

export interface FakeAdapterOptions {
  clock: Clock;
  channel?: ChannelName;
  account?: string;
  capabilities?: Partial<ChannelCapabilities>;
  /** Optional methods this platform lacks (no edits: the outbox sends instead; no typing indicator). */
  without?: ReadonlyArray<"edit" | "delete" | "typing">;
  /** Default "telegram-html". */
  markup?: MarkupDialect;
  limits?: Partial<ChannelLimits>;
  /** Ids start here, so two adapters on one "platform" (a restart) do not reuse them. */
  firstMessageId?: number;
  /** Fake time each call takes before the platform acts on it. Default 0. */
  latencyMs?: number;
  /** Takes files within these limits; null: a channel without files. Default 10 MB, captions 1024. */
  fileLimits?: FileLimits | null;
}

/**
 * An in-memory chat platform behind the ChannelAdapter contract: it keeps what each chat shows,
 * logs every call with its fake time, dedupes sends by idempotency key when it claims idempotent
 * sends (Discord's nonce), rejects edits to identical text, and runs scripted failures.
 */
export class FakeAdapter implements ChannelAdapter {
  readonly channel: ChannelName;
  readonly account: string;
  readonly capabilities: ChannelCapabilities;
  readonly limits: ChannelLimits;
  readonly markup: MarkupDialect;
  /** Shows a file as `[file <name>] <caption>`. */
  readonly files?: ChannelFiles;
  edit?: (target: string, messageId: string, message: OutgoingMessage) => Promise<void> = (
    target,
    messageId,
    message,
  ) => this.editMessage(target, messageId, message);
  delete?: (target: string, messageId: string) => Promise<void> = (target, messageId) =>
    this.deleteMessage(target, messageId);
  typing?: (target: string) => Promise<void> = (target) => this.showTyping(target);
  readonly calls: CallRecord[] = [];
  /** Most calls that were in flight at once. */
  maxInFlight = 0;
  private inFlight = 0;
  private readonly chats = new Map<string, ChatMessage[]>();
  private readonly script: { op: Operation; effect: Effect; target: string | undefined }[] = [];
  private nextId: number;

  constructor(private readonly options: FakeAdapterOptions) {
    this.channel = options.channel ?? "telegram";
    this.account = options.account ?? "bot-1";
    this.capabilities = { idempotentSend: false, ...options.capabilities };
    this.markup = options.markup ?? "telegram-html";
    for (const method of options.without ?? []) this[method] = undefined;
    this.limits = {
      maxMessageChars: 4096,
      perChatIntervalMs: 0,
      perAccountPerSecond: 0,
      editIntervalMs: 0,
      ...options.limits,
    };
    this.nextId = options.firstMessageId ?? 100;
    if (options.fileLimits !== null)
      this.files = {
        limits: options.fileLimits ?? { maxFileBytes: 10 * 1024 * 1024, maxCaptionChars: 1024 },
        send: (target, file) => this.sendFile(target, file),
      };
  }

  /** The next `times` calls of `op` (to `target`, if given) do `effect`; scripts queue in call order. */
  fail(op: Operation, effect: Effect | Error, times = 1, target?: string): this {
    const scripted: Effect = effect instanceof Error ? { kind: "fail", error: effect } : effect;
    for (let i = 0; i < times; i++) this.script.push({ op, effect: scripted, target });
    return this;
  }

  /** Shares one chat history with another adapter instance (the same platform after a restart). */
  sharePlatformWith(other: FakeAdapter): this {
    for (const [target, messages] of other.chats) this.chats.set(target, messages);
    return this;
  }

  /** What the chat shows, oldest first. */
  visible(target: string): string[] {
    return (this.chats.get(target) ?? []).map((message) => message.text);
  }

  callsOf(op: Operation, outcome: CallRecord["outcome"] = "ok"): CallRecord[] {
    return this.calls.filter((call) => call.op === op && call.outcome === outcome);
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  isConnected(): boolean {
    return true;
  }
  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const call: CallRecord = {
      op: "send",
      atMs: this.options.clock.now(),
      target,
      text: message.text,
      format: message.format,
      idempotencyKey: message.idempotencyKey,
      outcome: "ok",
      ...(message.replyTo === undefined ? {} : { replyTo: message.replyTo }),
    };
    return this.perform(call, () => {
      const chat = this.chat(target);
      if (this.capabilities.idempotentSend) {
        const earlier = chat.find((m) => m.idempotencyKey === message.idempotencyKey);
        if (earlier) return { messageIds: [earlier.id] };
      }
      const id = String(this.nextId++);
      chat.push({ id, text: message.text, format: message.format, idempotencyKey: message.idempotencyKey });
      return { messageIds: [id] };
    });
  }

  private async sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const call: CallRecord = {
      op: "file",
      atMs: this.options.clock.now(),
      target,
      text: file.caption,
      format: file.format,
      idempotencyKey: file.idempotencyKey,
      file: { filename: file.filename, mimeType: file.mimeType, bytes: file.bytes },
      outcome: "ok",
      ...(file.replyTo === undefined ? {} : { replyTo: file.replyTo }),
    };
    return this.perform(call, () => {
      const chat = this.chat(target);
      if (this.capabilities.idempotentSend) {
        const earlier = chat.find((m) => m.idempotencyKey === file.idempotencyKey);
        if (earlier) return { messageIds: [earlier.id] };
      }
      const id = String(this.nextId++);
      const text = `[file ${file.filename}]${file.caption === "" ? "" : ` ${file.caption}`}`;
      chat.push({ id, text, format: file.format, idempotencyKey: file.idempotencyKey });
      return { messageIds: [id] };
    });
  }

  private async editMessage(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const call: CallRecord = {
      op: "edit",
      atMs: this.options.clock.now(),
      target,
      messageId,
      text: message.text,
      format: message.format,
      outcome: "ok",
    };
    return this.perform(call, () => {
      const existing = this.chat(target).find((m) => m.id === messageId);
      if (!existing) throw rejected("message to edit not found");
      if (existing.text === message.text && existing.format === message.format) throw notModified();
      existing.text = message.text;
      existing.format = message.format;
    });
  }

  private async deleteMessage(target: string, messageId: string): Promise<void> {
    const call: CallRecord = {
      op: "delete",
      atMs: this.options.clock.now(),
      target,
      messageId,
      outcome: "ok",
    };
    return this.perform(call, () => {
      const chat = this.chat(target);
      const index = chat.findIndex((m) => m.id === messageId);
      if (index < 0) throw rejected("message to delete not found");
      chat.splice(index, 1);
    });
  }

  private async showTyping(target: string): Promise<void> {
    const call: CallRecord = { op: "typing", atMs: this.options.clock.now(), target, outcome: "ok" };
    return this.perform(call, () => undefined);
  }

  private async perform<T>(call: CallRecord, act: () => T): Promise<T> {
    this.calls.push(call);
    const index = this.script.findIndex(
      (entry) => entry.op === call.op && (entry.target === undefined || entry.target === call.target),
    );
    const scripted = index < 0 ? undefined : this.script.splice(index, 1)[0]!.effect;
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.options.latencyMs) await this.options.clock.sleep(this.options.latencyMs);
      if (scripted?.kind === "hang") {
        call.outcome = "hang";
        if (scripted.reached) act();
        return await new Promise<T>(() => {});
      }
      if (scripted?.kind === "fail") throw scripted.error;
      return act();
    } catch (error) {
      call.outcome = "error";
      throw error;
    } finally {
      this.inFlight -= 1;
    }
  }

  private chat(target: string): ChatMessage[] {
    let chat = this.chats.get(target);
    if (!chat) {
      chat = [];
      this.chats.set(target, chat);
    }
    return chat;
  }
}
