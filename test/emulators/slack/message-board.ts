import type { SlackBlock, SlackIdentity, VisibleMessage } from "./types.ts";

/** Slack cuts message text at this length rather than rejecting it. */
export const MAX_TEXT_CHARS = 40_000;

/** A Slack error code, as `{ok:false, error}` carries it. */
export type SlackErrorCode = string;

export interface PostInput {
  channel: string;
  text: string;
  threadTs?: string;
  mrkdwn: boolean;
  blocks?: SlackBlock[];
}

/**
 * What each channel shows: the bot's posts with edits applied, deletes removed and streams
 * assembled. Only messages the bot posted live here; user messages exist only as pushed events.
 */
export class MessageBoard {
  readonly #byChannel = new Map<string, VisibleMessage[]>();

  constructor(
    private readonly identity: SlackIdentity,
    private readonly nextTs: () => string,
  ) {}

  post(input: PostInput, stream?: "streaming"): VisibleMessage {
    const truncated = input.text.length > MAX_TEXT_CHARS;
    const message: VisibleMessage = {
      channel: input.channel,
      ts: this.nextTs(),
      text: truncated ? input.text.slice(0, MAX_TEXT_CHARS) : input.text,
      user: this.identity.botUserId,
      botId: this.identity.botId,
      mrkdwn: input.mrkdwn,
      edited: false,
      truncated,
    };
    if (input.threadTs !== undefined) message.threadTs = input.threadTs;
    if (input.blocks !== undefined && input.blocks.length > 0) message.blocks = input.blocks;
    if (stream !== undefined) message.stream = stream;
    const list = this.#byChannel.get(input.channel) ?? [];
    list.push(message);
    this.#byChannel.set(input.channel, list);
    return message;
  }

  update(channel: string, ts: string, text: string, blocks?: SlackBlock[]): VisibleMessage | SlackErrorCode {
    const message = this.find(channel, ts);
    if (message === undefined) return "message_not_found";
    if (message.stream === "streaming") return "message_is_streaming";
    message.text = text.slice(0, MAX_TEXT_CHARS);
    message.truncated = text.length > MAX_TEXT_CHARS;
    message.edited = true;
    if (blocks !== undefined) {
      if (blocks.length > 0) message.blocks = blocks;
      else delete message.blocks;
    }
    return message;
  }

  delete(channel: string, ts: string): SlackErrorCode | null {
    const list = this.#byChannel.get(channel);
    const index = list?.findIndex((message) => message.ts === ts) ?? -1;
    if (list === undefined || index < 0) return "message_not_found";
    list.splice(index, 1);
    return null;
  }

  append(channel: string, ts: string, text: string, stop: boolean): VisibleMessage | SlackErrorCode {
    const message = this.find(channel, ts);
    if (message === undefined) return "message_not_found";
    if (message.stream !== "streaming") return "message_not_in_streaming_state";
    message.text = (message.text + text).slice(0, MAX_TEXT_CHARS);
    if (stop) message.stream = "stopped";
    return message;
  }

  find(channel: string, ts: string): VisibleMessage | undefined {
    return this.#byChannel.get(channel)?.find((message) => message.ts === ts);
  }

  list(channel: string): VisibleMessage[] {
    return (this.#byChannel.get(channel) ?? []).map((message) => ({ ...message }));
  }

  all(): VisibleMessage[] {
    return [...this.#byChannel.values()].flat().map((message) => ({ ...message }));
  }

  clear(): void {
    this.#byChannel.clear();
  }
}
