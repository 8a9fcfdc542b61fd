/**
 * The client-server API calls this channel makes, with fetch and zod and nothing else: log in,
 * /sync, join and leave, send and redact with the caller's transaction ids, read one event and a
 * room's members and relations, typing and read receipts, media upload and the authenticated
 * download. Every failure is a SwitchboardError from errors.ts.
 */
import { z } from "zod";
import { SwitchboardError } from "../../src/errors.ts";
import { downloadFile } from "../download.ts";
import type { RemoteFile } from "../types.ts";
import { type MatrixFailure, toSwitchboardError } from "./errors.ts";

const CLIENT = "/_matrix/client/v3";

/** One event as /sync and /event return it; the fields the adapter reads, the rest kept. */
export const matrixEventSchema = z.looseObject({
  type: z.string(),
  event_id: z.string().optional(),
  sender: z.string().optional(),
  state_key: z.string().optional(),
  origin_server_ts: z.number().optional(),
  content: z.record(z.string(), z.unknown()).default({}),
  redacts: z.string().optional(),
  unsigned: z.record(z.string(), z.unknown()).optional(),
});
export type MatrixEvent = z.output<typeof matrixEventSchema>;

const eventList = z.object({ events: z.array(z.unknown()).default([]) }).loose();

const joinedRoomSchema = z.looseObject({
  timeline: z
    .looseObject({
      events: z.array(z.unknown()).default([]),
      limited: z.boolean().optional(),
      prev_batch: z.string().optional(),
    })
    .default({ events: [] }),
  state: eventList.default({ events: [] }),
});

export const syncResponseSchema = z.looseObject({
  next_batch: z.string().min(1),
  rooms: z
    .looseObject({
      join: z.record(z.string(), joinedRoomSchema).default({}),
      invite: z
        .record(z.string(), z.looseObject({ invite_state: eventList.default({ events: [] }) }))
        .default({}),
    })
    .default({ join: {}, invite: {} }),
});
export type SyncResponse = z.output<typeof syncResponseSchema>;
export type JoinedRoom = z.output<typeof joinedRoomSchema>;

const loginSchema = z.looseObject({ user_id: z.string(), access_token: z.string(), device_id: z.string() });
const whoamiSchema = z.looseObject({ user_id: z.string(), device_id: z.string().optional() });
const eventIdSchema = z.looseObject({ event_id: z.string() });
const uploadSchema = z.looseObject({ content_uri: z.string().startsWith("mxc://") });
const joinedMembersSchema = z.looseObject({ joined: z.record(z.string(), z.unknown()) });
const relationsSchema = z.looseObject({ chunk: z.array(z.unknown()) });
const memberSchema = z.looseObject({ displayname: z.string().max(500).nullish() });
const messagesSchema = z.looseObject({ chunk: z.array(z.unknown()), end: z.string().optional() });

export interface MatrixClientOptions {
  homeserverUrl: string;
  accessToken?: string;
  requestTimeoutMs: number;
}

export interface Session {
  userId: string;
  accessToken: string;
  deviceId: string;
}

interface CallOptions {
  method: "GET" | "POST" | "PUT";
  body?: unknown;
  raw?: { bytes: Uint8Array; contentType: string };
  /** Overrides the request deadline (a /sync waits longer). */
  timeoutMs?: number;
  signal?: AbortSignal;
  auth?: boolean;
}

export class MatrixClient {
  readonly #base: string;
  readonly #timeoutMs: number;
  #token: string | undefined;

  constructor(options: MatrixClientOptions) {
    this.#base = options.homeserverUrl.replace(/\/+$/, "");
    this.#token = options.accessToken;
    this.#timeoutMs = options.requestTimeoutMs;
  }

  set accessToken(token: string) {
    this.#token = token;
  }

  async login(userId: string, password: string): Promise<Session> {
    const answer = await this.#call("log in", `${CLIENT}/login`, loginSchema, {
      method: "POST",
      auth: false,
      body: {
        type: "m.login.password",
        identifier: { type: "m.id.user", user: userId },
        password,
        initial_device_display_name: "switchboard",
      },
    });
    return { userId: answer.user_id, accessToken: answer.access_token, deviceId: answer.device_id };
  }

  async whoami(): Promise<{ userId: string; deviceId: string | undefined }> {
    const answer = await this.#call("whoami", `${CLIENT}/account/whoami`, whoamiSchema, { method: "GET" });
    return { userId: answer.user_id, deviceId: answer.device_id };
  }

  /** One long poll: answers at once with news, else after `timeoutMs` on the homeserver. */
  async sync(options: {
    since: string | null;
    timeoutMs: number;
    filter: unknown;
    deadlineMs: number;
    signal: AbortSignal;
  }): Promise<SyncResponse> {
    const query = new URLSearchParams({
      timeout: String(options.timeoutMs),
      filter: JSON.stringify(options.filter),
    });
    if (options.since !== null) query.set("since", options.since);
    return await this.#call("sync", `${CLIENT}/sync?${query}`, syncResponseSchema, {
      method: "GET",
      timeoutMs: options.deadlineMs,
      signal: options.signal,
    });
  }

  /**
   * A room's events backwards from `from` down to `to` (pagination or sync tokens), newest first;
   * `end` continues, and is absent when nothing is left.
   */
  async messages(
    roomId: string,
    options: { from: string; to: string; limit: number },
  ): Promise<{ chunk: unknown[]; end: string | undefined }> {
    const query = new URLSearchParams({
      from: options.from,
      to: options.to,
      dir: "b",
      limit: String(options.limit),
    });
    const answer = await this.#call(
      "read room history",
      `${CLIENT}/rooms/${enc(roomId)}/messages?${query}`,
      messagesSchema,
      {
        method: "GET",
      },
    );
    return { chunk: answer.chunk, end: answer.end };
  }

  async join(roomId: string): Promise<void> {
    await this.#call("join", `${CLIENT}/rooms/${enc(roomId)}/join`, z.unknown(), {
      method: "POST",
      body: {},
    });
  }

  /** Leaves a room, or declines an invite to it. */
  async leave(roomId: string, reason: string): Promise<void> {
    await this.#call("leave", `${CLIENT}/rooms/${enc(roomId)}/leave`, z.unknown(), {
      method: "POST",
      body: { reason },
    });
  }

  /**
   * Sends an event with the caller's transaction id: the homeserver answers a repeated
   * (token, txnId) with the first event's id and shows nothing new.
   */
  async send(roomId: string, type: string, txnId: string, content: unknown): Promise<string> {
    const path = `${CLIENT}/rooms/${enc(roomId)}/send/${enc(type)}/${enc(txnId)}`;
    return (await this.#call(`send ${type}`, path, eventIdSchema, { method: "PUT", body: content })).event_id;
  }

  async redact(roomId: string, eventId: string, txnId: string, reason?: string): Promise<void> {
    const path = `${CLIENT}/rooms/${enc(roomId)}/redact/${enc(eventId)}/${enc(txnId)}`;
    await this.#call("redact", path, z.unknown(), { method: "PUT", body: reason ? { reason } : {} });
  }

  async event(roomId: string, eventId: string): Promise<MatrixEvent> {
    return await this.#call(
      "read an event",
      `${CLIENT}/rooms/${enc(roomId)}/event/${enc(eventId)}`,
      matrixEventSchema,
      {
        method: "GET",
      },
    );
  }

  /** A member's display name in a room; undefined when they set none. */
  async displayName(roomId: string, userId: string): Promise<string | undefined> {
    const path = `${CLIENT}/rooms/${enc(roomId)}/state/m.room.member/${enc(userId)}`;
    const content = await this.#call("read a member", path, memberSchema, { method: "GET" });
    return content.displayname ?? undefined;
  }

  async joinedMembers(roomId: string): Promise<string[]> {
    const answer = await this.#call(
      "list members",
      `${CLIENT}/rooms/${enc(roomId)}/joined_members`,
      joinedMembersSchema,
      { method: "GET" },
    );
    return Object.keys(answer.joined);
  }

  /** Events relating to `eventId` with `relType` (the bot's reactions under a prompt). */
  async relations(roomId: string, eventId: string, relType: string): Promise<MatrixEvent[]> {
    const path = `/_matrix/client/v1/rooms/${enc(roomId)}/relations/${enc(eventId)}/${enc(relType)}?limit=50`;
    const answer = await this.#call("list relations", path, relationsSchema, { method: "GET" });
    return answer.chunk.flatMap((raw) => {
      const parsed = matrixEventSchema.safeParse(raw);
      return parsed.success ? [parsed.data] : [];
    });
  }

  async typing(roomId: string, userId: string, typing: boolean, timeoutMs: number): Promise<void> {
    await this.#call("typing", `${CLIENT}/rooms/${enc(roomId)}/typing/${enc(userId)}`, z.unknown(), {
      method: "PUT",
      body: typing ? { typing: true, timeout: timeoutMs } : { typing: false },
    });
  }

  async readReceipt(roomId: string, eventId: string): Promise<void> {
    await this.#call(
      "read receipt",
      `${CLIENT}/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`,
      z.unknown(),
      {
        method: "POST",
        body: {},
      },
    );
  }

  /** Uploads bytes to the media repository; returns their mxc:// URI. */
  async upload(bytes: Uint8Array, contentType: string, filename: string): Promise<string> {
    const path = `/_matrix/media/v3/upload?${new URLSearchParams({ filename })}`;
    return (
      await this.#call("upload media", path, uploadSchema, { method: "POST", raw: { bytes, contentType } })
    ).content_uri;
  }

  /** Streams an mxc:// file through the authenticated media endpoint (Matrix 1.11). */
  async download(mxc: string, signal: AbortSignal, statedSizeBytes?: number): Promise<RemoteFile> {
    const match = /^mxc:\/\/([^/]+)\/([^/?#]+)$/.exec(mxc);
    if (!match)
      throw new SwitchboardError(
        "platform_rejected",
        "The attachment is not an mxc:// media URI; it cannot be fetched.",
      );
    const url = `${this.#base}/_matrix/client/v1/media/download/${enc(match[1]!)}/${enc(match[2]!)}`;
    return await downloadFile("Matrix", url, {
      headers: this.#headers(true),
      signal,
      ...(statedSizeBytes === undefined ? {} : { statedSizeBytes }),
    });
  }

  #headers(auth: boolean): Record<string, string> {
    return auth && this.#token !== undefined ? { authorization: `Bearer ${this.#token}` } : {};
  }

  async #call<Schema extends z.ZodType>(
    operation: string,
    path: string,
    schema: Schema,
    options: CallOptions,
  ): Promise<z.output<Schema>> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const headers: Record<string, string> = this.#headers(options.auth ?? true);
    let body: BodyInit | undefined;
    if (options.raw) {
      headers["content-type"] = options.raw.contentType;
      body = options.raw.bytes as Uint8Array<ArrayBuffer>;
    } else if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    let failure: MatrixFailure;
    try {
      const response = await fetch(`${this.#base}${path}`, { method: options.method, headers, body, signal });
      const text = await response.text();
      const parsedBody = parseJson(text);
      if (response.ok) {
        const result = schema.safeParse(parsedBody);
        if (result.success) return result.data;
        throw new SwitchboardError(
          "platform_rejected",
          `The Matrix homeserver's answer to ${operation} is not what the client-server API describes: ${z.prettifyError(result.error)}`,
          { details: { platform: "matrix", operation } },
        );
      }
      failure = {
        kind: "status",
        status: response.status,
        body: parsedBody,
        retryAfterHeader: response.headers.get("retry-after"),
      };
    } catch (error) {
      if (error instanceof SwitchboardError) throw error;
      if (options.signal?.aborted) throw error;
      failure = deadline.aborted ? { kind: "timeout", afterMs: timeoutMs } : { kind: "thrown", error };
    }
    throw toSwitchboardError(failure, operation);
  }
}

function enc(part: string): string {
  return encodeURIComponent(part);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
