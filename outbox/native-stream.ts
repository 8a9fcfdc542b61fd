import type { NativeStream } from "../channels/types.ts";
import type { PlatformCaller } from "./platform-call.ts";

/**
 * One reply shown through a platform's native streamed message (Slack chat streaming). The
 * message can only grow, so it follows the answer while the answer only grows and stays within
 * `maxChars`; anything else (a retried attempt withdrew text, the answer outgrew one message, a
 * final text that does not extend what is shown) ends the stream and hands the message to
 * ordinary edits.
 */
export class NativeStreamSession {
  /** The streamed message once started. */
  private messageId: string | null = null;
  /** What the streamed message shows: every appended text, in order. */
  private shown = "";

  constructor(
    private readonly stream: NativeStream,
    private readonly call: PlatformCaller,
    /** Persists the message id as soon as the platform returns it. */
    private readonly onStarted: (messageIds: string[]) => Promise<void>,
  ) {}

  get messageIds(): string[] {
    return this.messageId === null ? [] : [this.messageId];
  }

  /** True when the stream can show `text` by appending to what it shows. */
  canShow(text: string): boolean {
    return text.trim() !== "" && text.startsWith(this.shown) && text.length <= this.stream.maxChars;
  }

  /** Shows `text` (which `canShow`): starts the stream or appends the new tail. */
  async show(text: string): Promise<void> {
    const tail = text.slice(this.shown.length);
    if (tail === "") return;
    if (this.messageId === null) {
      const receipt = await this.call("send", () => this.stream.start(text));
      this.messageId = receipt.messageIds[0] ?? null;
      await this.onStarted(this.messageIds);
    } else {
      const messageId = this.messageId;
      await this.call("edit", () => this.stream.append(messageId, tail));
    }
    this.shown = text;
  }

  /**
   * Ends the stream. With a final text the stream can show, the remaining tail goes out with the
   * stop and the message is final: true. Otherwise the stream stops as it is and the caller edits
   * the message to its final text: false.
   */
  async end(finalText: string | null): Promise<boolean> {
    const messageId = this.messageId;
    if (messageId === null) return false;
    const complete = finalText !== null && this.canShow(finalText);
    const tail = complete ? finalText.slice(this.shown.length) : "";
    await this.call("edit", () => this.stream.stop(messageId, tail));
    if (complete) this.shown = finalText;
    return complete;
  }
}
