import type { types, webApi } from "@slack/bolt";
import { SwitchboardError } from "../../src/errors.ts";
import type { OutgoingFile, OutgoingMessage, SendReceipt } from "../types.ts";
import { toSwitchboardError } from "./errors.ts";
import { decodeReplyTarget } from "./keys.ts";

/** Longest markdown_text Slack takes in one streaming call. */
export const SLACK_STREAM_MAX_CHARS = 12_000;

/** The new message's ts as a receipt; Slack answering ok without one is a platform fault. */
function receiptOf(result: { ts?: string }, method: string): SendReceipt {
  if (typeof result.ts !== "string") {
    throw new SwitchboardError("platform_unavailable", `Slack accepted ${method} but returned no ts`, {
      retryable: false,
      details: { platform: "slack", method },
    });
  }
  return { messageIds: [result.ts] };
}

function slackErrorOf(error: unknown): unknown {
  return error instanceof SwitchboardError ? error.details?.slackError : undefined;
}

/**
 * chat.postMessage / chat.update / chat.delete through Bolt's WebClient. Threading comes from the
 * reply target alone: Slack's only way to reply is the thread, which the target already names, so
 * `OutgoingMessage.replyTo` adds nothing here.
 */
export class SlackSender {
  readonly #token: () => string;

  /** `botToken`: the token, or a function that reads the current one (an installed workspace's rotates). */
  constructor(
    private readonly client: webApi.WebClient,
    botToken: string | (() => string),
    private readonly maxMessageChars: number,
  ) {
    this.#token = typeof botToken === "string" ? () => botToken : botToken;
  }

  private get botToken(): string {
    return this.#token();
  }

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const { channel, threadTs } = decodeReplyTarget(target);
    this.#checkText(message, "chat.postMessage");
    const result = await this.#call("chat.postMessage", () =>
      this.client.chat.postMessage({
        token: this.botToken,
        channel,
        text: message.text,
        mrkdwn: message.format === "rich",
        ...(message.buttons ? { blocks: blocksFor(message) } : {}),
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      }),
    );
    return receiptOf(result, "chat.postMessage");
  }

  /**
   * Slack's external upload: files.getUploadURLExternal announces the file, its bytes are POSTed
   * to the URL it returns, and files.completeUploadExternal shares it in the channel (thread) with
   * the caption as its initial comment. No idempotency key: a crash mid-way is `ambiguous`. The
   * receipt names the file (`file:<id>`): Slack does not return the message's ts here.
   */
  async sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const { channel, threadTs } = decodeReplyTarget(target);
    const announced = await this.#call("files.getUploadURLExternal", () =>
      this.client.files.getUploadURLExternal({
        token: this.botToken,
        filename: file.filename,
        length: file.bytes.byteLength,
      }),
    );
    const uploadUrl = announced.upload_url;
    const fileId = announced.file_id;
    if (typeof uploadUrl !== "string" || typeof fileId !== "string") {
      throw new SwitchboardError(
        "platform_unavailable",
        "Slack files.getUploadURLExternal returned no upload_url",
        {
          retryable: true,
          details: { platform: "slack", method: "files.getUploadURLExternal" },
        },
      );
    }
    const uploaded = await fetch(uploadUrl, {
      method: "POST",
      body: new Blob([file.bytes as Uint8Array<ArrayBuffer>]),
      headers: { "content-type": "application/octet-stream" },
    }).catch((error: unknown) => {
      throw new SwitchboardError(
        "platform_timeout",
        `Slack's file upload failed: ${(error as Error).message}`,
        {
          retryable: false,
          details: { platform: "slack", method: "upload" },
        },
      );
    });
    if (!uploaded.ok) {
      throw new SwitchboardError(
        uploaded.status >= 500 ? "platform_unavailable" : "platform_rejected",
        `Slack refused the file upload with HTTP ${uploaded.status}`,
        { retryable: uploaded.status >= 500, details: { platform: "slack", method: "upload" } },
      );
    }
    await this.#call("files.completeUploadExternal", () =>
      this.client.files.completeUploadExternal({
        token: this.botToken,
        files: [{ id: fileId, title: file.filename }],
        channel_id: channel,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        ...(file.caption === "" ? {} : { initial_comment: file.caption }),
      } as Parameters<webApi.WebClient["files"]["completeUploadExternal"]>[0]),
    );
    return { messageIds: [`file:${fileId}`] };
  }

  /**
   * A message still streaming (its stream was cut off by a crash) refuses chat.update; the stream
   * is stopped first, then the edit is made.
   */
  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    this.#checkText(message, "chat.update");
    const update = () =>
      this.#call("chat.update", () =>
        this.client.chat.update({
          token: this.botToken,
          channel,
          ts: messageId,
          text: message.text,
          // An empty list removes earlier blocks (an approval prompt's buttons once decided).
          blocks: message.buttons ? blocksFor(message) : [],
        }),
      );
    try {
      await update();
    } catch (error) {
      if (slackErrorOf(error) !== "message_is_streaming") throw error;
      await this.stopStream(target, messageId, "");
      await update();
    }
  }

  /** A short notice only `user` sees, in the target (and its thread). */
  async postEphemeral(target: string, user: string, text: string): Promise<void> {
    const { channel, threadTs } = decodeReplyTarget(target);
    await this.#call("chat.postEphemeral", () =>
      this.client.chat.postEphemeral({
        token: this.botToken,
        channel,
        user,
        text,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      }),
    );
  }

  /** chat.startStream in the target's thread, for `recipient` (a user id) of team `teamId`. */
  async startStream(
    target: string,
    recipient: { userId: string; teamId: string },
    markdown: string,
  ): Promise<SendReceipt> {
    const { channel, threadTs } = decodeReplyTarget(target);
    if (threadTs === undefined) {
      throw new SwitchboardError("input_invalid", `Slack streams only in threads; ${target} names no thread`);
    }
    this.#checkStreamText(markdown, "chat.startStream");
    const result = await this.#call("chat.startStream", () =>
      this.client.chat.startStream({
        token: this.botToken,
        channel,
        thread_ts: threadTs,
        markdown_text: markdown,
        recipient_user_id: recipient.userId,
        recipient_team_id: recipient.teamId,
      }),
    );
    return receiptOf(result, "chat.startStream");
  }

  async appendStream(target: string, messageId: string, markdown: string): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    this.#checkStreamText(markdown, "chat.appendStream");
    await this.#call("chat.appendStream", () =>
      this.client.chat.appendStream({
        token: this.botToken,
        channel,
        ts: messageId,
        markdown_text: markdown,
      }),
    );
  }

  async stopStream(target: string, messageId: string, markdown: string): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    try {
      await this.#call("chat.stopStream", () =>
        this.client.chat.stopStream({
          token: this.botToken,
          channel,
          ts: messageId,
          ...(markdown === "" ? {} : { markdown_text: markdown }),
        }),
      );
    } catch (error) {
      if (slackErrorOf(error) === "message_not_in_streaming_state") return;
      throw error;
    }
  }

  /** Deleting a message that is already gone succeeds, so a retried delete is harmless. */
  async delete(target: string, messageId: string): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    try {
      await this.#call("chat.delete", () =>
        this.client.chat.delete({ token: this.botToken, channel, ts: messageId }),
      );
    } catch (error) {
      if (error instanceof SwitchboardError && error.details?.slackError === "message_not_found") return;
      throw error;
    }
  }

  /**
   * Shows `name` as the bot's reaction on the message, then takes `previous` away. Adding one the
   * bot already shows, or removing one it does not, is a success.
   */
  /** Adds `name`, then takes away each of `previous` (one the message does not show is no error). */
  async react(target: string, messageId: string, name: string, previous: readonly string[]): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    await this.#tolerating("already_reacted", () =>
      this.#call("reactions.add", () =>
        this.client.reactions.add({ token: this.botToken, channel, timestamp: messageId, name }),
      ),
    );
    for (const old of previous) {
      if (old === name) continue;
      await this.#tolerating("no_reaction", () =>
        this.#call("reactions.remove", () =>
          this.client.reactions.remove({ token: this.botToken, channel, timestamp: messageId, name: old }),
        ),
      );
    }
  }

  async #tolerating(slackError: string, call: () => Promise<unknown>): Promise<void> {
    try {
      await call();
    } catch (error) {
      if (error instanceof SwitchboardError && error.details?.slackError === slackError) return;
      throw error;
    }
  }

  #checkStreamText(markdown: string, method: string): void {
    if (markdown.length > SLACK_STREAM_MAX_CHARS) {
      throw new SwitchboardError(
        "input_invalid",
        `${method} text of ${markdown.length} chars exceeds Slack's limit of ${SLACK_STREAM_MAX_CHARS} per call`,
        { details: { platform: "slack", method, textChars: markdown.length } },
      );
    }
  }

  #checkText(message: OutgoingMessage, method: string): void {
    if (message.text.length === 0) {
      throw new SwitchboardError(
        "input_invalid",
        `${method} needs non-empty text; Slack rejects empty messages`,
        {
          details: { platform: "slack", method },
        },
      );
    }
    if (message.text.length > this.maxMessageChars) {
      throw new SwitchboardError(
        "input_invalid",
        `Message of ${message.text.length} chars exceeds Slack's limit of ${this.maxMessageChars}; split it before sending`,
        { details: { platform: "slack", method, textChars: message.text.length } },
      );
    }
  }

  async #call<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toSwitchboardError(error, method);
    }
  }
}

/** Slack's limits: section text 3000 characters, 25 elements per actions block, action_id ≤ 255. */
const MAX_SECTION_CHARS = 3000;
const MAX_ROW_BUTTONS = 25;
const MAX_ACTION_ID_CHARS = 255;

/**
 * The text as section blocks (a message with blocks shows them instead of `text`, which stays the
 * notification fallback) and one actions block per row of buttons; action_id and value are the
 * button's data, which the press brings back.
 */
export function blocksFor(message: OutgoingMessage): types.KnownBlock[] {
  const rows = message.buttons ?? [];
  const textType = message.format === "rich" ? "mrkdwn" : "plain_text";
  const sections: types.KnownBlock[] = [];
  for (let start = 0; start < message.text.length; start += MAX_SECTION_CHARS) {
    sections.push({
      type: "section",
      text: { type: textType as "mrkdwn", text: message.text.slice(start, start + MAX_SECTION_CHARS) },
    });
  }
  const actions = rows.map((row, index): types.KnownBlock => {
    if (row.length === 0 || row.length > MAX_ROW_BUTTONS) {
      throw new SwitchboardError(
        "input_invalid",
        `A Slack actions block holds 1–${MAX_ROW_BUTTONS} buttons.`,
      );
    }
    return {
      type: "actions",
      block_id: `buttons_${index}`,
      elements: row.map((button) => {
        if (button.data.length === 0 || button.data.length > MAX_ACTION_ID_CHARS) {
          throw new SwitchboardError(
            "input_invalid",
            `A Slack button's data must be 1–${MAX_ACTION_ID_CHARS} characters, got ${button.data.length}.`,
          );
        }
        return {
          type: "button" as const,
          text: { type: "plain_text" as const, text: button.label.slice(0, 75) },
          action_id: button.data,
          value: button.data,
        };
      }),
    };
  });
  return [...sections, ...actions];
}
