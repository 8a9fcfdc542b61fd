/**
 * WhatsApp through the Cloud API: webhooks on the gateway's HTTP server (`routes()`), sends with
 * fetch (client.ts). Every message in a webhook goes to ingress, and every status to the gateway's
 * `deliveryStatus`, before Meta is answered 200.
 */
import { SwitchboardError } from "../../src/errors.ts";
import type { Logger } from "../../src/util/log.ts";
import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelEvents,
  ChannelFiles,
  ChannelLimits,
  HttpRoute,
  Ingress,
  OutgoingFile,
  OutgoingMessage,
  RemoteFile,
  SendReceipt,
} from "../types.ts";
import {
  type ReplyButton,
  type SendOptions,
  toReplyButtons,
  WHATSAPP_LIMITS,
  WhatsAppClient,
} from "./client.ts";
import { TEMPLATE_TEXT_CHARS, WEBHOOK_PATH, type WhatsAppConfig, whatsappConfigSchema } from "./config.ts";
import { isOutsideServiceWindow } from "./errors.ts";
import { decodeReplyTarget, encodeReplyTarget } from "./keys.ts";
import { parseWhatsAppMessage } from "./parse.ts";
import { Recent } from "./recent.ts";
import { type StatusUpdate, toStatusUpdate } from "./status.ts";
import { createWebhookRoutes } from "./webhook-route.ts";
import type { ReceivedMessage, ReceivedStatus, WebhookItems } from "./webhook-schema.ts";

/** Upload limits that apply to what the adapter sends: JPEG/PNG as images, everything else as documents. */
export const WHATSAPP_FILE_LIMITS = {
  maxFileBytes: 100 * 1024 * 1024,
  maxPhotoBytes: 5 * 1024 * 1024,
  maxCaptionChars: WHATSAPP_LIMITS.captionChars,
} as const;

/** The body of the buttons message that follows a prompt too long for an interactive body. */
const BUTTONS_BODY = "Choose:";
/** Chats whose latest message is kept, to show the typing indicator on it. */
const CHATS_KEPT = 10_000;
/** Most of a reacted-to message's text handed to ingress with the reaction (it keeps a shorter excerpt). */
const REACTION_EXCERPT_CHARS = 500;
/** Image types WhatsApp shows as images; every other file goes as a document. */
const IMAGE_TYPES = new Set(["image/jpeg", "image/png"]);

export interface WhatsAppAdapterOptions {
  /** The adapter's events (`whatsapp.*`): refused webhooks, skipped items, failed read marks. */
  logger: Logger;
}

export class WhatsAppAdapter implements ChannelAdapter {
  readonly channel = "whatsapp" as const;
  /** Sends are not idempotent (the Cloud API takes no client key), but status webhooks settle them. */
  readonly capabilities: ChannelCapabilities;
  readonly limits: ChannelLimits;
  readonly markup = "whatsapp-markdown" as const;
  readonly files: ChannelFiles = {
    limits: WHATSAPP_FILE_LIMITS,
    send: (target, file) => this.#sendFile(target, file),
  };

  readonly #config: WhatsAppConfig;
  readonly #client: WhatsAppClient;
  readonly #logger: Logger;
  /** Message texts by wamid, both directions, to quote in front of a reply to them. */
  readonly #texts: Recent<string>;
  /** Each chat's latest message from the user, by reply target: typing is shown by marking it read. */
  readonly #latestInbound = new Recent<string>(CHATS_KEPT);
  /** The re-engagement template sent for a message that failed outside the window, by the message's wamid. */
  readonly #reengaged = new Recent<string>(CHATS_KEPT);
  #ingress: Ingress | undefined;
  #events: ChannelEvents = {};
  #accepting = false;
  /** Webhook bodies being handled, and work started after answering (notices, read marks). */
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(config: WhatsAppConfig, options: WhatsAppAdapterOptions) {
    this.#config = config;
    this.#logger = options.logger;
    this.#texts = new Recent(config.quotedTextsKept);
    this.#client = new WhatsAppClient({
      apiRoot: config.apiRoot,
      apiVersion: config.apiVersion,
      phoneNumberId: config.phoneNumberId,
      accessToken: config.accessToken,
      requestTimeoutMs: config.requestTimeoutMs,
      pairIntervalMs: config.pairIntervalMs,
    });
    this.capabilities = { idempotentSend: false, statusWaitMs: config.statusWaitMs };
    this.limits = {
      maxMessageChars: WHATSAPP_LIMITS.textChars,
      // Meta's pair rate lets short bursts through; a refusal (131056) holds the chat back instead.
      perChatIntervalMs: 0,
      perAccountPerSecond: config.throughputPerSecond,
      editIntervalMs: 1000,
    };
  }

  /** The business phone number id. */
  get account(): string {
    return this.#config.phoneNumberId;
  }

  /** The Graph API client, for what the outbox does beyond sending text (templates). */
  get client(): WhatsAppClient {
    return this.#client;
  }

  async start(ingress: Ingress, events: ChannelEvents = {}): Promise<void> {
    this.#ingress = ingress;
    this.#events = events;
    this.#accepting = true;
  }

  async stop(): Promise<void> {
    this.#accepting = false;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  isConnected(): boolean {
    return this.#accepting;
  }

  routes(): HttpRoute[] {
    return createWebhookRoutes({
      path: WEBHOOK_PATH,
      appSecret: this.#config.appSecret,
      verifyToken: this.#config.verifyToken,
      isAccepting: () => this.#accepting && this.#ingress !== undefined,
      handle: (items) => this.#track(this.#handle(items, performance.now())),
      onRefused: (status, reason) => this.#logger.warn("whatsapp.webhook_refused", { status, reason }),
    });
  }

  /**
   * Sends text (with reply buttons under it when it has some). Refused because the user's 24-hour
   * window is closed (131047 in the answer), it goes as the re-engagement template when one is
   * configured; the buttons cannot go with it.
   */
  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    try {
      return await this.#sendMessage(target, message);
    } catch (error) {
      if (!isOutsideServiceWindow(error)) throw error;
      const wamid = await this.#sendTemplate(decodeReplyTarget(target), message.text, message.idempotencyKey);
      if (wamid === null) throw error;
      return this.#sent(wamid, message.text);
    }
  }

  async #sendMessage(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const to = decodeReplyTarget(target);
    const options: SendOptions = {
      callbackData: message.idempotencyKey,
      ...(message.replyTo === undefined ? {} : { replyTo: message.replyTo }),
    };
    const buttons = message.buttons?.flat() ?? [];
    if (buttons.length === 0)
      return this.#sent(await this.#client.sendText(to, message.text, options), message.text);
    // Checked before anything is sent, so a refusal leaves nothing half shown.
    const replyButtons = toReplyButtons(buttons.map(toReplyButton));
    if (message.text !== "" && message.text.length <= WHATSAPP_LIMITS.interactiveBodyChars)
      return this.#sent(
        await this.#client.sendButtons(to, message.text, replyButtons, options),
        message.text,
      );
    // The prompt goes first as text; the buttons message carries the outbox's key, so its status
    // is the one that settles the record.
    const { callbackData: _, ...withoutKey } = options;
    const prompt =
      message.text === ""
        ? []
        : [this.#sent(await this.#client.sendText(to, message.text, withoutKey), message.text)];
    const choice = this.#sent(
      await this.#client.sendButtons(to, BUTTONS_BODY, replyButtons, {
        callbackData: message.idempotencyKey,
      }),
      BUTTONS_BODY,
    );
    return { messageIds: [...prompt.flatMap((r) => r.messageIds), ...choice.messageIds] };
  }

  /** Shows "typing…" by marking the chat's latest message read; nothing when none is known. */
  async typing(target: string): Promise<void> {
    const latest = this.#latestInbound.get(target);
    if (latest !== undefined) await this.#client.markRead(latest, { typing: true });
  }

  /** Media by id: looked up, then downloaded with the token (the URL lives about 5 minutes). */
  openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
    return this.#client.openMedia(ref, signal);
  }

  async #sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const to = decodeReplyTarget(target);
    const kind = IMAGE_TYPES.has(file.mimeType) ? "image" : "document";
    const mediaId = await this.#client.uploadMedia(file.bytes, file.mimeType, file.filename);
    const wamid = await this.#client.sendMedia(
      to,
      kind,
      { id: mediaId },
      {
        ...(file.caption === "" ? {} : { caption: file.caption }),
        ...(kind === "document" ? { filename: file.filename } : {}),
        ...(file.replyTo === undefined ? {} : { replyTo: file.replyTo }),
        callbackData: file.idempotencyKey,
      },
    );
    return this.#sent(wamid, file.caption);
  }

  #sent(wamid: string, text: string): SendReceipt {
    if (text !== "") this.#texts.set(wamid, text);
    return { messageIds: [wamid] };
  }

  /**
   * Each message to ingress and each status to the gateway, in the order Meta listed them. One
   * that cannot be recorded does not stop the others; the body is then refused, and Meta's
   * redelivery finds the others recorded (duplicates).
   */
  async #handle(all: WebhookItems, arrivedAtMs: number): Promise<void> {
    const items = this.#ownItems(all);
    for (const problem of items.problems)
      this.#logger.warn("whatsapp.webhook_item_skipped", { path: problem.path, problem: problem.problem });
    for (const { phoneNumberId, error } of items.errors)
      this.#logger.warn("whatsapp.platform_error", { phoneNumberId, code: error.code, title: error.title });
    const failures: string[] = [];
    for (const received of items.messages) {
      try {
        await this.#receive(received, arrivedAtMs);
      } catch (error) {
        failures.push(describe(error));
      }
    }
    for (const received of items.statuses) {
      try {
        await this.#reportStatus(received);
      } catch (error) {
        failures.push(describe(error));
      }
    }
    if (failures.length > 0)
      throw new SwitchboardError(
        "platform_unavailable",
        `${failures.length} item(s) of the webhook could not be recorded: ${failures.join("; ")}`,
        { retryable: true },
      );
  }

  /**
   * The items of this adapter's number: another account's adapter takes the others from the same
   * body (the route is shared). Those of a number no account has are noted at debug level by each.
   */
  #ownItems(items: WebhookItems): WebhookItems {
    const own = (item: { phoneNumberId: string }) => item.phoneNumberId === this.account;
    const others = [...items.messages, ...items.statuses].filter((item) => !own(item)).length;
    if (others > 0)
      this.#logger.debug("whatsapp.webhook_other_number", {
        items: others,
        hint: "items for another business number; that number's account takes them",
      });
    return {
      ...items,
      messages: items.messages.filter(own),
      statuses: items.statuses.filter(own),
      errors: items.errors.filter(own),
    };
  }

  async #receive(received: ReceivedMessage, arrivedAtMs: number): Promise<void> {
    const ingress = this.#ingress;
    if (ingress === undefined)
      throw new SwitchboardError("runtime_closed", "The WhatsApp adapter is not started");
    const parsed = parseWhatsAppMessage(received, {
      account: this.account,
      quotedText: (messageId) => this.#texts.get(messageId),
    });
    if (parsed.kind === "skip") {
      this.#logger.debug("whatsapp.message_skipped", { reason: parsed.reason, detail: parsed.detail });
      return;
    }
    if (parsed.kind === "reaction") {
      const { reaction } = parsed;
      this.#logger.info("whatsapp.reaction", {
        updateKey: reaction.updateKey,
        conversationKey: reaction.conversationKey,
        messageId: reaction.messageId,
        removed: reaction.emoji === null,
      });
      // A note on the conversation for the agent's next turn, with the start of the message
      // reacted to when it is still known; ingress starts no run for it.
      const excerpt = this.#texts.get(reaction.messageId);
      await ingress(
        {
          channel: this.channel,
          account: this.account,
          updateKey: reaction.updateKey,
          principal: reaction.principal,
          conversationKey: reaction.conversationKey,
          replyTarget: encodeReplyTarget(reaction.principal.id),
          surface: "dm",
          text: "",
          addressedToBot: true,
          attachments: [],
          receivedAtMs: reaction.receivedAtMs,
          reaction: {
            emoji: reaction.emoji,
            messageId: reaction.messageId,
            ...(excerpt === undefined ? {} : { excerpt: excerpt.slice(0, REACTION_EXCERPT_CHARS) }),
          },
        },
        { arrivedAtMs },
      );
      return;
    }
    const message = { ...parsed.message, channel: this.channel };
    if (message.action === undefined && message.text !== "" && received.message.known)
      this.#texts.set(received.message.value.id, message.text);
    const outcome = await ingress(message, { arrivedAtMs });
    if (outcome.kind === "admitted") {
      this.#latestInbound.set(message.replyTarget, message.updateKey);
      this.#background("mark_read", this.#client.markRead(message.updateKey, { typing: true }));
    }
    if (outcome.kind === "action" && outcome.notice !== "")
      this.#background(
        "press_notice",
        this.#client.sendText(decodeReplyTarget(message.replyTarget), outcome.notice).then((wamid) => {
          this.#sent(wamid, outcome.notice);
        }),
      );
  }

  /** The re-engagement template carrying `text`; null when none is configured or there is no text. */
  async #sendTemplate(to: string, text: string, callbackData: string): Promise<string | null> {
    const template = this.#config.reengageTemplate;
    if (template === undefined || text === "") return null;
    const parameter = text.length > TEMPLATE_TEXT_CHARS ? `${text.slice(0, TEMPLATE_TEXT_CHARS - 1)}…` : text;
    const wamid = await this.#client.sendTemplate(
      to,
      { name: template.name, language: template.language, bodyParameters: [parameter] },
      { callbackData },
    );
    this.#logger.info("whatsapp.reengaged", {
      template: template.name,
      key: callbackData,
      reason: "the user's 24-hour window is closed: sent as the re-engagement template",
    });
    return wamid;
  }

  /**
   * A free-form message Meta accepted and then failed because the window is closed: sent again as
   * the template when one is configured and its text is still known. Meta redelivers statuses, so
   * each failed message is re-engaged once (the template's id is remembered).
   */
  async #reengageAfterFailure(update: StatusUpdate): Promise<string | null> {
    if (!update.failure?.outsideServiceWindow || update.outboxRecordId === undefined) return null;
    const already = this.#reengaged.get(update.messageId);
    if (already !== undefined) return already;
    const text = this.#texts.get(update.messageId);
    if (text === undefined) return null;
    let wamid: string | null;
    try {
      wamid = await this.#sendTemplate(decodeReplyTarget(update.recipient), text, update.outboxRecordId);
    } catch (error) {
      // An outage: refuse the webhook, so Meta's redelivery tries again. A refusal (no such
      // template, a wrong parameter count) would be refused every time: the record fails instead.
      if (error instanceof SwitchboardError && error.retryable) throw error;
      this.#logger.warn("whatsapp.reengage_refused", {
        error: describe(error),
        hint: "check whatsapp.reengageTemplate: an approved template with one body parameter",
      });
      return null;
    }
    if (wamid !== null) this.#reengaged.set(update.messageId, wamid);
    return wamid;
  }

  async #reportStatus(received: ReceivedStatus): Promise<void> {
    const update = toStatusUpdate(received, this.account);
    if (update === null || update.outcome === "other") return;
    const template = await this.#reengageAfterFailure(update);
    const report = this.#events.deliveryStatus;
    if (template !== null) {
      // The template went out in its place: the record is delivered (its own status follows).
      if (update.outboxRecordId !== undefined && report !== undefined)
        await report({
          idempotencyKey: update.outboxRecordId,
          messageId: template,
          outcome: "delivered",
          status: "sent as the re-engagement template",
        });
      return;
    }
    if (update.outcome === "failed")
      this.#logger.warn("whatsapp.send_failed", {
        messageId: update.messageId,
        code: update.failure?.code,
        title: update.failure?.title,
        ...(update.failure?.outsideServiceWindow
          ? { hint: "outside the 24-hour window: only a template reaches the user" }
          : {}),
      });
    if (update.outboxRecordId === undefined || report === undefined) return;
    await report({
      idempotencyKey: update.outboxRecordId,
      messageId: update.messageId,
      outcome: update.outcome,
      status: update.status,
      ...(update.failure === undefined
        ? {}
        : {
            reason: `WhatsApp ${update.failure.code}: ${update.failure.title}${update.failure.details ? ` (${update.failure.details})` : ""}${update.failure.outsideServiceWindow ? "; the user last wrote more than 24 hours ago, so only a template reaches them (set whatsapp.reengageTemplate)" : ""}`,
          }),
    });
  }

  /** Work after Meta's answer whose failure changes nothing durable: logged, and awaited by stop(). */
  #background(what: string, work: Promise<unknown>): void {
    void this.#track(work).catch((error: unknown) =>
      this.#logger.warn(`whatsapp.${what}_failed`, { error: describe(error) }),
    );
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    void work.then(
      () => this.#inFlight.delete(work),
      () => this.#inFlight.delete(work),
    );
    return work;
  }
}

/** Validates `config` against the channel's schema and builds the adapter. */
export function createWhatsAppAdapter(config: unknown, options: WhatsAppAdapterOptions): WhatsAppAdapter {
  const parsed = whatsappConfigSchema.safeParse(config);
  if (!parsed.success)
    throw new SwitchboardError(
      "config_invalid",
      `Invalid WhatsApp configuration: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return new WhatsAppAdapter(parsed.data, options);
}

/** WhatsApp button titles are at most 20 characters; a longer label is cut with "…". */
function toReplyButton(button: { label: string; data: string }): ReplyButton {
  const max = WHATSAPP_LIMITS.buttonTitleChars;
  const title = button.label.length > max ? `${button.label.slice(0, max - 1)}…` : button.label;
  return { id: button.data, title };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
