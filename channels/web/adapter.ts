/**
 * The `web` channel: the gateway's own chat page. Messages arrive by POST from the browser and
 * go through ingress like any platform's; answers are kept in an in-memory transcript per browser
 * session and pushed to the page over Server-Sent Events.
 */
import { createHash, randomBytes } from "node:crypto";
import { SwitchboardError } from "../../src/errors.ts";
import { type Clock, systemClock } from "../../src/util/clock.ts";
import { newId } from "../../src/util/ids.ts";
import type {
  ChannelAdapter,
  ChannelAdmission,
  ChannelCapabilities,
  ChannelFiles,
  ChannelLimits,
  HttpRoute,
  InboundMessage,
  Ingress,
  IngressOutcome,
  OutgoingFile,
  OutgoingMessage,
  RemoteFile,
  SendReceipt,
} from "../types.ts";
import { webFileOf } from "./files.ts";
import { WEB_ACCOUNT } from "./inbound.ts";
import { createWebRoutes } from "./routes.ts";
import { type WebHistory, type WebTranscriptEntry, WebTranscripts } from "./transcript.ts";
import { type WebUploadOptions, WebUploads } from "./uploads.ts";
import { isWebUserId, webUserIds } from "./user-id.ts";

export const WEB_CAPABILITIES: ChannelCapabilities = {
  // A resend with the same idempotency key returns the first send's message id and shows nothing.
  idempotentSend: true,
};

/**
 * The gateway's HTTP server admits the page (its token and session) and limits each session's
 * messages itself (SWITCHBOARD_WEB_MESSAGES_PER_MINUTE, answered with a 429), and the browser picks
 * its own message ids.
 */
export const WEB_ADMISSION: ChannelAdmission = {
  ownAccessControl: true,
  ownFloodLimit: true,
  clientChosenKeys: true,
};

export const WEB_LIMITS: ChannelLimits = {
  maxMessageChars: 8000,
  perChatIntervalMs: 0,
  perAccountPerSecond: 1000,
  editIntervalMs: 250,
};

export interface WebChannelOptions {
  /** Defaults to the system clock. */
  clock?: Clock;
  /** Longest message accepted from the browser and sent to it; default 8000. */
  maxMessageChars?: number;
  /** Messages replayed to a page that (re)connects; default 200. */
  maxMessagesPerSession?: number;
  /** Browser sessions remembered; default 1000. */
  maxSessions?: number;
  /** Comment line on a quiet stream this often; default 15 000 ms. */
  heartbeatMs?: number;
  /** Messages one browser session may post per minute; default 30. */
  messagesPerSessionPerMinute?: number;
  /** A session's durable transcript, loaded when it is not in memory (after a restart, or evicted). */
  history?: WebHistory;
  /**
   * The key the user id of each browser session is derived under (user-id.ts): the gateway keeps
   * one in its database (`WEB_USER_ID_SECRET`), so a session keeps its conversation across
   * restarts. Default: a random key of this process (ids, and conversations, change on restart).
   */
  userIdKey?: string;
  /**
   * The gateway's blob store: the page uploads files into it, and files the agent sends are served
   * from it. Absent: the page cannot attach files and the channel sends none.
   */
  uploads?: WebUploadOptions;
}

/** The web channel: every optional capability of ChannelAdapter is present. */
export interface WebChannel extends ChannelAdapter {
  readonly channel: "web";
  readonly account: typeof WEB_ACCOUNT;
  routes(): HttpRoute[];
  edit(target: string, messageId: string, message: OutgoingMessage): Promise<void>;
  delete(target: string, messageId: string): Promise<void>;
  typing(target: string): Promise<void>;
  openFile(ref: string, signal: AbortSignal): Promise<RemoteFile>;
  /** Present with `uploads`: a file joins the transcript, served to its session only. */
  readonly files?: ChannelFiles;
}

export function createWebChannel(options: WebChannelOptions = {}): WebChannel {
  const clock = options.clock ?? systemClock;
  const maxMessageChars = options.maxMessageChars ?? WEB_LIMITS.maxMessageChars;
  const transcripts = new WebTranscripts(
    {
      maxMessagesPerSession: options.maxMessagesPerSession ?? 200,
      maxSessions: options.maxSessions ?? 1000,
    },
    options.history,
  );
  const uploads = options.uploads ? new WebUploads(options.uploads) : undefined;
  const userIdOf = webUserIds(options.userIdKey ?? randomBytes(32).toString("base64url"));
  let ingress: Ingress | null = null;
  let stopping = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  const receive = (message: InboundMessage): Promise<IngressOutcome> => {
    if (!ingress)
      return Promise.reject(
        new SwitchboardError("platform_unavailable", "The web channel is not started; start() it first."),
      );
    const call = ingress(message);
    inFlight.add(call);
    const forget = () => inFlight.delete(call);
    call.then(forget, forget);
    return call;
  };

  const routes = createWebRoutes({
    clock,
    transcripts,
    userIdOf,
    maxMessageChars,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    messagesPerSessionPerMinute: options.messagesPerSessionPerMinute ?? 30,
    receive,
    stopSignal: () => stopping.signal,
    ...(uploads ? { uploads } : {}),
  });

  /** A reply target is a web user id (the id derived from a session id; user-id.ts). */
  const userOf = (target: string): string => {
    if (!isWebUserId(target))
      throw new SwitchboardError(
        "platform_rejected",
        `Not a web user id: "${target.slice(0, 40)}" (expected 22 characters of A-Z a-z 0-9 _ -).`,
        { retryable: false },
      );
    return target;
  };

  /**
   * Shows the message `entry` builds unless a send with this idempotency key already did (then its
   * message id, and nothing new is shown).
   */
  const show = async (
    target: string,
    idempotencyKey: string,
    entry: (messageId: string, atMs: number) => WebTranscriptEntry,
  ): Promise<SendReceipt> => {
    const userId = userOf(target);
    await transcripts.load(userId, clock.now());
    const earlier = transcripts.sentWithKey(userId, idempotencyKey);
    if (earlier !== undefined) return { messageIds: [earlier] };
    const nowMs = clock.now();
    const messageId = newId("web", nowMs);
    transcripts.append(userId, entry(messageId, nowMs), idempotencyKey);
    return { messageIds: [messageId] };
  };

  const files: ChannelFiles | undefined = uploads
    ? {
        limits: {
          maxFileBytes: uploads.maxFileBytes,
          maxCaptionChars: maxMessageChars,
          servedByGateway: true,
        },
        send: (target: string, file: OutgoingFile): Promise<SendReceipt> =>
          show(target, file.idempotencyKey, (messageId, atMs) => ({
            messageId,
            role: "assistant",
            text: file.caption,
            atMs,
            // Blobs are content-addressed: the sha256 of the bytes is the id they are stored under.
            files: [
              webFileOf({
                id: createHash("sha256").update(file.bytes).digest("hex"),
                name: file.filename,
                mimeType: file.mimeType,
                sizeBytes: file.bytes.byteLength,
              }),
            ],
          })),
      }
    : undefined;

  return {
    ...(files ? { files } : {}),
    channel: "web",
    account: WEB_ACCOUNT,
    capabilities: WEB_CAPABILITIES,
    limits: { ...WEB_LIMITS, maxMessageChars },
    // The page renders Markdown itself, sanitised (src/gateway/http/assets/markdown.ts).
    markup: "commonmark",
    admission: WEB_ADMISSION,

    async start(next: Ingress): Promise<void> {
      if (stopping.signal.aborted) stopping = new AbortController();
      ingress = next;
    },

    async stop(): Promise<void> {
      ingress = null;
      stopping.abort();
      await Promise.allSettled([...inFlight]);
    },

    isConnected: () => ingress !== null,

    routes: () => routes,

    send: (target: string, message: OutgoingMessage): Promise<SendReceipt> =>
      show(target, message.idempotencyKey, (messageId, atMs) => ({
        messageId,
        role: "assistant",
        text: message.text,
        atMs,
        ...(message.buttons ? { buttons: message.buttons } : {}),
      })),

    async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
      const userId = userOf(target);
      await transcripts.load(userId, clock.now());
      transcripts.edit(userId, messageId, message.text, clock.now(), message.buttons);
    },

    async delete(target: string, messageId: string): Promise<void> {
      const userId = userOf(target);
      await transcripts.load(userId, clock.now());
      transcripts.delete(userId, messageId, clock.now());
    },

    async typing(target: string): Promise<void> {
      transcripts.typing(userOf(target), clock.now());
    },

    async openFile(ref: string): Promise<RemoteFile> {
      if (!uploads)
        throw new SwitchboardError("platform_rejected", "file uploads are not enabled on this gateway");
      return await uploads.open(ref);
    },
  };
}
