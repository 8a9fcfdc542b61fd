/**
 * The WhatsApp Cloud API calls this channel makes, with fetch and nothing else: send text,
 * reply buttons, media and templates; upload media; look up and download media; mark a message
 * read with the typing indicator. Every failure is a SwitchboardError from errors.ts.
 */
import { SwitchboardError } from "../../src/errors.ts";
import { downloadFile } from "../download.ts";
import type { RemoteFile } from "../types.ts";
import { toSwitchboardError, type WhatsAppFailure } from "./errors.ts";

export const DEFAULT_API_ROOT = "https://graph.facebook.com";
/** The Graph API version used unless WHATSAPP_API_VERSION names another. */
export const DEFAULT_API_VERSION = "v26.0";
/** Meta's pair rate: about one message every 6 s to one user. */
export const DEFAULT_PAIR_INTERVAL_MS = 6_000;

/** Meta's limits on what one message may carry. */
export const WHATSAPP_LIMITS = {
  textChars: 4096,
  captionChars: 1024,
  interactiveBodyChars: 1024,
  replyButtons: 3,
  buttonTitleChars: 20,
  buttonIdChars: 256,
  callbackDataChars: 512,
} as const;

export interface WhatsAppClientOptions {
  /** Default https://graph.facebook.com; no trailing slash needed. */
  apiRoot?: string;
  /** Default DEFAULT_API_VERSION, e.g. "v26.0". */
  apiVersion?: string;
  phoneNumberId: string;
  /** System-user token with whatsapp_business_messaging. */
  accessToken: string;
  /** Deadline of each Graph call. Default 10 000. */
  requestTimeoutMs?: number;
  /** How long a pair-rate refusal (131056) holds back that user's chat. Default 6000. */
  pairIntervalMs?: number;
}

export interface SendOptions {
  /** wamid of the message this one answers (shown quoted above it). */
  replyTo?: string;
  /** biz_opaque_callback_data: echoed in this message's status webhooks (the outbox record id). */
  callbackData?: string;
}

export interface ReplyButton {
  /** Comes back as `button_reply.id` when pressed; at most 256 characters. */
  id: string;
  /** What the button shows; at most 20 characters. */
  title: string;
}

export type MediaKind = "image" | "document" | "audio" | "video" | "sticker";

export interface TemplateMessage {
  name: string;
  /** The template's language code, e.g. "en_US". */
  language: string;
  /** Values for the body's {{1}}, {{2}}, … in order. */
  bodyParameters: string[];
}

export interface MediaInfo {
  /** Short-lived download URL; needs the access token. */
  url: string;
  mimeType: string;
  sizeBytes: number | undefined;
  sha256: string | undefined;
}

export class WhatsAppClient {
  private readonly base: string;
  private readonly accessToken: string;
  private readonly phoneNumberId: string;
  private readonly timeoutMs: number;
  private readonly pairIntervalMs: number;

  constructor(options: WhatsAppClientOptions) {
    const root = (options.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, "");
    this.base = `${root}/${options.apiVersion ?? DEFAULT_API_VERSION}`;
    this.accessToken = options.accessToken;
    this.phoneNumberId = options.phoneNumberId;
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.pairIntervalMs = options.pairIntervalMs ?? DEFAULT_PAIR_INTERVAL_MS;
  }

  /** Sends text (WhatsApp markup); returns the message's wamid. */
  async sendText(to: string, text: string, options: SendOptions = {}): Promise<string> {
    checkLength("text", text, WHATSAPP_LIMITS.textChars);
    return await this.sendMessage(
      "send text",
      to,
      "text",
      { text: { body: text, preview_url: true } },
      options,
    );
  }

  /** Sends `body` with up to 3 reply buttons under it (approval prompts). */
  async sendButtons(
    to: string,
    body: string,
    buttons: ReplyButton[],
    options: SendOptions = {},
  ): Promise<string> {
    checkLength("interactive body", body, WHATSAPP_LIMITS.interactiveBodyChars);
    const interactive = {
      type: "button",
      body: { text: body },
      action: { buttons: toReplyButtons(buttons).map((reply) => ({ type: "reply", reply })) },
    };
    return await this.sendMessage("send buttons", to, "interactive", { interactive }, options);
  }

  /** Sends uploaded media (`{ id }`) or media Meta fetches itself (`{ link }`). */
  async sendMedia(
    to: string,
    kind: MediaKind,
    source: { id: string } | { link: string },
    extra: { caption?: string; filename?: string } & SendOptions = {},
  ): Promise<string> {
    const { caption, filename, ...options } = extra;
    if (caption !== undefined) {
      if (kind === "audio" || kind === "sticker")
        throw new SwitchboardError("input_invalid", `WhatsApp ${kind} messages cannot carry a caption`);
      checkLength("caption", caption, WHATSAPP_LIMITS.captionChars);
    }
    const media = {
      ...source,
      ...(caption ? { caption } : {}),
      ...(filename !== undefined && kind === "document" ? { filename } : {}),
    };
    return await this.sendMessage(`send ${kind}`, to, kind, { [kind]: media }, options);
  }

  /** Sends an approved template: the one kind of message allowed outside the 24-hour window. */
  async sendTemplate(to: string, template: TemplateMessage, options: SendOptions = {}): Promise<string> {
    const components =
      template.bodyParameters.length === 0
        ? []
        : [{ type: "body", parameters: template.bodyParameters.map((text) => ({ type: "text", text })) }];
    return await this.sendMessage(
      "send template",
      to,
      "template",
      { template: { name: template.name, language: { code: template.language }, components } },
      options,
    );
  }

  /** Uploads a file for sending; returns its media id (Meta keeps it 30 days). */
  async uploadMedia(bytes: Uint8Array, mimeType: string, filename: string): Promise<string> {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", mimeType);
    form.set("file", new File([bytes as Uint8Array<ArrayBuffer>], filename, { type: mimeType }));
    const body = await this.call("upload media", `${this.phoneNumberId}/media`, {
      method: "POST",
      body: form,
    });
    const id = (body as { id?: unknown } | null)?.id;
    if (typeof id !== "string" || id === "")
      throw new SwitchboardError(
        "platform_unavailable",
        "WhatsApp answered the media upload without a media id",
        {
          retryable: true,
        },
      );
    return id;
  }

  /** Describes media by id: its download URL (valid for minutes), type and size. */
  async mediaInfo(mediaId: string): Promise<MediaInfo> {
    if (!/^\d{1,30}$/.test(mediaId))
      throw new SwitchboardError("platform_rejected", "WhatsApp media id is not a Graph object id");
    const body = (await this.call("look up media", mediaId, { method: "GET" })) as Record<
      string,
      unknown
    > | null;
    if (typeof body?.url !== "string")
      throw new SwitchboardError("platform_unavailable", "WhatsApp described the media without a URL", {
        retryable: true,
      });
    return {
      url: body.url,
      mimeType: typeof body.mime_type === "string" ? body.mime_type : "application/octet-stream",
      sizeBytes: typeof body.file_size === "number" ? body.file_size : Number(body.file_size) || undefined,
      sha256: typeof body.sha256 === "string" ? body.sha256 : undefined,
    };
  }

  /** Streams media by id (looked up first; the download needs the token too). */
  async openMedia(mediaId: string, signal: AbortSignal): Promise<RemoteFile> {
    const info = await this.mediaInfo(mediaId);
    return await downloadFile("WhatsApp", info.url, {
      signal,
      headers: { authorization: `Bearer ${this.accessToken}` },
      ...(info.sizeBytes === undefined ? {} : { statedSizeBytes: info.sizeBytes }),
    });
  }

  /**
   * Marks a received message (and the ones before it) read; with `typing`, shows "typing…" until
   * the next message or for 25 s.
   */
  async markRead(messageId: string, options: { typing: boolean }): Promise<void> {
    await this.call("mark read", `${this.phoneNumberId}/messages`, {
      method: "POST",
      json: {
        messaging_product: "whatsapp",
        status: "read",
        message_id: messageId,
        ...(options.typing ? { typing_indicator: { type: "text" } } : {}),
      },
    });
  }

  private async sendMessage(
    operation: string,
    to: string,
    type: string,
    content: Record<string, unknown>,
    options: SendOptions,
  ): Promise<string> {
    if (options.callbackData !== undefined)
      checkLength("biz_opaque_callback_data", options.callbackData, WHATSAPP_LIMITS.callbackDataChars);
    const body = await this.call(operation, `${this.phoneNumberId}/messages`, {
      method: "POST",
      json: {
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to,
        type,
        ...content,
        ...(options.replyTo === undefined ? {} : { context: { message_id: options.replyTo } }),
        ...(options.callbackData === undefined ? {} : { biz_opaque_callback_data: options.callbackData }),
      },
    });
    const id = (body as { messages?: Array<{ id?: unknown }> } | null)?.messages?.[0]?.id;
    if (typeof id !== "string" || id === "") {
      // Accepted, but we cannot name the message: whether it went out is for its status to tell.
      throw new SwitchboardError(
        "platform_timeout",
        `WhatsApp accepted ${operation} without a message id; it may or may not have been sent.`,
        { retryable: true, details: { platform: "whatsapp", operation } },
      );
    }
    return id;
  }

  private async call(
    operation: string,
    path: string,
    init: { method: "GET" | "POST"; json?: unknown; body?: FormData },
  ): Promise<unknown> {
    const context = { operation, pairIntervalMs: this.pairIntervalMs };
    const fail = (failure: WhatsAppFailure) => toSwitchboardError(failure, context);
    const headers: Record<string, string> = { authorization: `Bearer ${this.accessToken}` };
    if (init.json !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.base}/${path}`, {
        method: init.method,
        headers,
        ...(init.json !== undefined
          ? { body: JSON.stringify(init.json) }
          : init.body
            ? { body: init.body }
            : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      if (error instanceof Error && error.name === "TimeoutError")
        throw fail({ kind: "timeout", afterMs: this.timeoutMs });
      throw fail({ kind: "thrown", error });
    }
    let body: unknown = null;
    try {
      body = text === "" ? null : JSON.parse(text);
    } catch {
      if (response.ok) throw fail({ kind: "thrown", error: new Error("the answer was not JSON") });
    }
    if (!response.ok)
      throw fail({
        kind: "answer",
        status: response.status,
        body,
        retryAfterHeader: response.headers.get("retry-after"),
      });
    return body;
  }
}

/** Validates reply buttons against Meta's rules; throws input_invalid naming the offending value. */
export function toReplyButtons(buttons: ReplyButton[]): ReplyButton[] {
  if (buttons.length === 0 || buttons.length > WHATSAPP_LIMITS.replyButtons)
    throw new SwitchboardError(
      "input_invalid",
      `WhatsApp shows 1 to ${WHATSAPP_LIMITS.replyButtons} reply buttons under a message; got ${buttons.length}`,
    );
  const seen = new Set<string>();
  for (const { id, title } of buttons) {
    if (title.length === 0 || title.length > WHATSAPP_LIMITS.buttonTitleChars)
      throw new SwitchboardError(
        "input_invalid",
        `WhatsApp button titles are 1 to ${WHATSAPP_LIMITS.buttonTitleChars} characters; "${title}" has ${title.length}`,
      );
    if (id.length === 0 || id.length > WHATSAPP_LIMITS.buttonIdChars)
      throw new SwitchboardError(
        "input_invalid",
        `WhatsApp button ids are 1 to ${WHATSAPP_LIMITS.buttonIdChars} characters; the one for "${title}" has ${id.length}`,
      );
    if (seen.has(id))
      throw new SwitchboardError("input_invalid", `WhatsApp button ids must be unique; "${id}" repeats`);
    seen.add(id);
  }
  return buttons.map(({ id, title }) => ({ id, title }));
}

function checkLength(what: string, value: string, max: number): void {
  if (value.length > max)
    throw new SwitchboardError(
      "input_invalid",
      `WhatsApp takes at most ${max} characters of ${what}; got ${value.length} (split it first)`,
    );
}
