import type { webApi } from "@slack/bolt";
import { SwitchboardError } from "../../src/errors.ts";
import type { OutgoingMessage, SendReceipt } from "../types.ts";
import { toSwitchboardError } from "./errors.ts";
import { decodeReplyTarget } from "./keys.ts";

/**
 * chat.postMessage / chat.update / chat.delete through Bolt's WebClient. Threading comes from the
 * reply target alone: Slack's only way to reply is the thread, which the target already names, so
 * `OutgoingMessage.replyTo` adds nothing here.
 */
export class SlackSender {
  constructor(
    private readonly client: webApi.WebClient,
    private readonly botToken: string,
    private readonly maxMessageChars: number,
  ) {}

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const { channel, threadTs } = decodeReplyTarget(target);
    this.#checkText(message, "chat.postMessage");
    const result = await this.#call("chat.postMessage", () =>
      this.client.chat.postMessage({
        token: this.botToken,
        channel,
        text: message.text,
        mrkdwn: message.format === "rich",
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      }),
    );
    if (typeof result.ts !== "string") {
      throw new SwitchboardError(
        "platform_unavailable",
        "Slack accepted chat.postMessage but returned no ts",
        {
          retryable: false,
          details: { platform: "slack", method: "chat.postMessage" },
        },
      );
    }
    return { messageIds: [result.ts] };
  }

  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const { channel } = decodeReplyTarget(target);
    this.#checkText(message, "chat.update");
    await this.#call("chat.update", () =>
      this.client.chat.update({ token: this.botToken, channel, ts: messageId, text: message.text }),
    );
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
