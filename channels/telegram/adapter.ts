/**
 * The Telegram ChannelAdapter: receives by long polling or webhook, sends through the Bot API.
 * Receiving in either mode calls ingress and acknowledges Telegram only after it resolves.
 */

import { Api } from "grammy";
import type { ReactionTypeEmoji, Update, UserFromGetMe } from "grammy/types";
import { SwitchboardError } from "../../src/errors.ts";
import { type Clock, systemClock } from "../../src/util/clock.ts";
import type { CommandMenu } from "../commands.ts";
import { downloadFile } from "../download.ts";
import type { ChannelStateStore } from "../module.ts";
import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelFiles,
  ChannelLimits,
  HttpRoute,
  Ingress,
  OutgoingMessage,
  RemoteFile,
  ReplyStatus,
  SendReceipt,
} from "../types.ts";
import { registerTelegramMenu } from "./commands.ts";
import { parseTelegramConfig, type TelegramConfig, type TelegramConfigInput } from "./config.ts";
import { callWithDeadline, type GrammySignal } from "./deadline.ts";
import type { TelegramEventSink } from "./events.ts";
import { type ParseContext, parseUpdate } from "./parse.ts";
import { TelegramPoller } from "./polling.ts";
import { TelegramSender } from "./send.ts";
import { TELEGRAM_FILE_LIMITS } from "./send-file.ts";
import { decodeTarget } from "./target.ts";
import { webhookRoute } from "./webhook.ts";

export const TELEGRAM_CAPABILITIES: ChannelCapabilities = {
  // sendMessage has no idempotency key: a repeated send after an unknown outcome may show twice.
  idempotentSend: false,
};

/**
 * Telegram's published flood limits. Groups are stricter than perChatIntervalMs says: at most 20
 * messages per minute per group; the outbox should space group sends by 3 s when it can tell.
 */
export const TELEGRAM_LIMITS: ChannelLimits = {
  maxMessageChars: 4096,
  perChatIntervalMs: 1000,
  perAccountPerSecond: 30,
  editIntervalMs: 1000,
};

/**
 * The status reactions, from the emoji Telegram lets bots react with (it has no ⏳ ✅ ⚠️): 👀 seen,
 * 🙏 waiting for an approval, 👌 done, 🤷 failed or uncertain.
 */
const STATUS_REACTIONS: Record<ReplyStatus, ReactionTypeEmoji["emoji"]> = {
  seen: "👀",
  waiting: "🙏",
  done: "👌",
  failed: "🤷",
};

export interface TelegramAdapterDeps {
  clock?: Clock;
  onEvent?: TelegramEventSink;
  /** The commands set as the bot's menu at start; absent: the menu is left as it is. */
  commands?: CommandMenu;
  /** Keeps the menu's hash across restarts, so an unchanged menu is not set again. */
  state?: ChannelStateStore;
}

type Running =
  | { mode: "stopped" }
  | { mode: "polling"; poller: TelegramPoller }
  | { mode: "webhook"; accepting: boolean };

export class TelegramAdapter implements ChannelAdapter {
  readonly channel = "telegram" as const;
  readonly capabilities = TELEGRAM_CAPABILITIES;
  readonly limits = TELEGRAM_LIMITS;
  readonly markup = "telegram-html" as const;
  readonly files: ChannelFiles = {
    limits: TELEGRAM_FILE_LIMITS,
    send: (target, file) => this.sender.sendFile(target, file),
  };
  readonly config: TelegramConfig;
  private readonly api: Api;
  private readonly sender: TelegramSender;
  private readonly clock: Clock;
  private readonly onEvent: TelegramEventSink;
  private readonly commands: CommandMenu | undefined;
  private readonly state: ChannelStateStore | undefined;
  private me: UserFromGetMe | null = null;
  private ingress: Ingress | null = null;
  private running: Running = { mode: "stopped" };
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(config: TelegramConfigInput | TelegramConfig, deps: TelegramAdapterDeps = {}) {
    this.config = parseTelegramConfig(config);
    this.clock = deps.clock ?? systemClock;
    this.onEvent = deps.onEvent ?? (() => {});
    this.commands = deps.commands;
    this.state = deps.state;
    this.api = new Api(this.config.token, {
      apiRoot: this.config.apiRoot,
      // Our own deadline (requestTimeoutMs) fires first; this is grammY's backstop.
      timeoutSeconds: Math.ceil(this.config.requestTimeoutMs / 1000) + 5,
    });
    this.sender = new TelegramSender(this.api, this.config.requestTimeoutMs);
  }

  /** The bot's user id: the token's prefix, confirmed by getMe at start(). */
  get account(): string {
    return String(this.me?.id ?? this.config.token.split(":")[0]);
  }

  async start(ingress: Ingress): Promise<void> {
    if (this.running.mode !== "stopped") {
      throw new SwitchboardError(
        "input_invalid",
        "The Telegram adapter is already started; call stop() first.",
      );
    }
    const me = await this.call("getMe", (signal) => this.api.getMe(signal));
    this.me = me;
    this.ingress = ingress;
    // In the background: a slow or hanging Bot API delays the menu, never the bot's start.
    if (this.commands) {
      const registering = registerTelegramMenu({
        api: this.api,
        menu: this.commands,
        ...(this.state ? { state: this.state } : {}),
        stateName: `telegram:${me.id}:commands`,
        nowMs: this.clock.now(),
        call: (method, run) => this.call(method, run),
        onEvent: this.onEvent,
      });
      this.inFlight.add(registering);
      void registering.finally(() => this.inFlight.delete(registering));
    }
    // Edits always: before the answer an edit corrects the message (ingress decides what after).
    const allowedUpdates: ("message" | "edited_message" | "callback_query")[] = [
      "message",
      "edited_message",
      "callback_query",
    ];

    if (this.config.mode === "webhook") {
      const { webhookUrl, webhookSecret } = this.config;
      await this.call("setWebhook", (signal) =>
        this.api.setWebhook(
          webhookUrl,
          { secret_token: webhookSecret, allowed_updates: allowedUpdates },
          signal,
        ),
      );
      this.running = { mode: "webhook", accepting: true };
      return;
    }
    const poller = new TelegramPoller({
      token: this.config.token,
      apiRoot: this.config.apiRoot,
      botInfo: me,
      pollTimeoutSeconds: this.config.pollTimeoutSeconds,
      requestTimeoutMs: this.config.requestTimeoutMs,
      allowedUpdates,
      receive: (update, arrivedAtMs) => this.receive(update, arrivedAtMs),
      clock: this.clock,
      onEvent: this.onEvent,
    });
    this.running = { mode: "polling", poller };
    try {
      await poller.start();
    } catch (error) {
      this.running = { mode: "stopped" };
      throw error;
    }
  }

  async stop(): Promise<void> {
    const running = this.running;
    if (running.mode === "polling") await running.poller.stop();
    if (running.mode === "webhook") running.accepting = false;
    await Promise.allSettled([...this.inFlight]);
    this.running = { mode: "stopped" };
  }

  isConnected(): boolean {
    switch (this.running.mode) {
      case "polling":
        return this.running.poller.isConnected();
      case "webhook":
        return this.running.accepting;
      case "stopped":
        return false;
    }
  }

  routes(): HttpRoute[] {
    if (this.config.mode !== "webhook") return [];
    return [
      webhookRoute({
        path: this.config.webhookPath,
        secret: this.config.webhookSecret,
        receive: (update, arrivedAtMs) => this.receive(update, arrivedAtMs),
        isAccepting: () => this.running.mode === "webhook" && this.running.accepting,
        onEvent: this.onEvent,
      }),
    ];
  }

  send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    return this.sender.send(target, message);
  }

  edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    return this.sender.edit(target, messageId, message);
  }

  delete(target: string, messageId: string): Promise<void> {
    return this.sender.delete(target, messageId);
  }

  typing(target: string): Promise<void> {
    return this.sender.typing(target);
  }

  /** One reaction per message: setMessageReaction replaces the previous one. */
  react(target: string, messageId: string, status: ReplyStatus): Promise<void> {
    return this.sender.react(target, messageId, STATUS_REACTIONS[status]);
  }

  /** Drafts exist only in private chats, whose chat id is the user's (positive) id. */
  draftFor(target: string): ((draftId: number, text: string) => Promise<void>) | null {
    const { chatId, threadId } = decodeTarget(target);
    if (chatId <= 0 || threadId !== undefined) return null;
    return (draftId, text) => this.sender.draft(target, draftId, text);
  }

  /** Parses and hands one update to ingress; resolves when it is durable or skipped. */
  private receive(update: Update, arrivedAtMs: number): Promise<void> {
    const handling = this.deliver(update, arrivedAtMs);
    this.inFlight.add(handling);
    return handling.finally(() => this.inFlight.delete(handling));
  }

  private async deliver(update: Update, arrivedAtMs: number): Promise<void> {
    const me = this.me;
    const ingress = this.ingress;
    if (!me || !ingress)
      throw new SwitchboardError("runtime_closed", "Telegram update received before start()");
    const parsed = parseUpdate(update, this.parseContext(me));
    if (parsed.kind === "skip") {
      this.onEvent({ kind: "update_skipped", updateId: update.update_id, reason: parsed.reason });
      return;
    }
    const outcome = await ingress(parsed.message, { arrivedAtMs });
    const action = parsed.message.action;
    if (action) {
      // Every press is answered (else the client spins); a failed answer is not worth a redelivery.
      const notice = outcome.kind === "action" ? outcome.notice : "";
      await this.sender.answerCallback(action.interactionId, notice).catch((error: unknown) => {
        this.onEvent({
          kind: "callback_answer_failed",
          updateId: update.update_id,
          reason: error instanceof Error ? error.message : String(error),
        });
      });
    }
  }

  private parseContext(me: UserFromGetMe): ParseContext {
    return {
      account: String(me.id),
      botId: me.id,
      botUsername: me.username,
      groupSessions: this.config.groupSessions,
    };
  }

  /**
   * getFile, then the bytes at `<api root>/file/bot<token>/<file_path>`. getFile refuses files
   * over 20 MB (a 400, not retried). The URL holds the token: errors never include it.
   */
  async openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
    const file = await this.call("getFile", (deadline) =>
      this.api.getFile(
        ref,
        AbortSignal.any([signal, deadline as unknown as AbortSignal]) as unknown as GrammySignal,
      ),
    );
    if (!file.file_path) {
      throw new SwitchboardError(
        "platform_rejected",
        "Telegram getFile returned no file_path for this file.",
      );
    }
    const url = `${this.config.apiRoot}/file/bot${this.config.token}/${file.file_path}`;
    return await downloadFile("Telegram", url, {
      signal,
      ...(file.file_size === undefined ? {} : { statedSizeBytes: file.file_size }),
    });
  }

  private call<T>(method: string, run: (signal: GrammySignal) => Promise<T>): Promise<T> {
    return callWithDeadline(method, this.config.requestTimeoutMs, run);
  }
}
