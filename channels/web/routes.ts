/** The browser's two endpoints: post a message, and follow the session's transcript. */
import { isSwitchboardError } from "../../src/errors.ts";
import type { Clock } from "../../src/util/clock.ts";
import { eventStreamResponse } from "../../src/util/event-stream.ts";
import { KeyedRateLimiter } from "../../src/util/rate-limit.ts";
import { isServerBodyLimitError, PayloadTooLargeError, readBodyText } from "../../src/util/read-body.ts";
import { streamChunks } from "../../src/util/stream-chunks.ts";
import type { HttpRoute, HttpRouteContext, InboundMessage, IngressOutcome } from "../types.ts";
import { WEB_FILES_PATH, webFileHeaders, webFileOf } from "./files.ts";
import { isSessionId, toInboundMessage, webMessageBodySchema } from "./inbound.ts";
import { pendingRefusalText } from "./pending-uploads.ts";
import type { WebTranscripts } from "./transcript.ts";
import { fileTooLargeText, isUploadTooLarge, type WebUploads } from "./uploads.ts";
import type { WebUserIds } from "./user-id.ts";

export const WEB_MESSAGES_PATH = "/web/api/messages";
export const WEB_STREAM_PATH = "/web/api/stream";
/** Where the page uploads a file's bytes (`application/octet-stream`) before sending its message. */
export const WEB_UPLOADS_PATH = "/web/api/uploads";
/**
 * Carries the session id on the stream request. A header, not the query string, because proxies
 * and browser history keep URLs, and the session id is the only key to its transcript. Each route
 * turns it into the user id derived from it (user-id.ts) at once, and uses only that.
 */
export const WEB_SESSION_HEADER = "x-switchboard-session";

/** A message of 8000 characters is at most 32 KiB of UTF-8; the JSON around it is small. */
const MAX_BODY_BYTES = 64 * 1024;

export interface WebRoutesDeps {
  clock: Clock;
  transcripts: WebTranscripts;
  /** The user id of a session id; the session id itself goes no further than this call. */
  userIdOf: WebUserIds;
  maxMessageChars: number;
  heartbeatMs: number;
  /** Messages one session may post per minute (a burst of that many, then that rate). */
  messagesPerSessionPerMinute: number;
  /** Hands the message to ingress; rejects when it is not accepting or ingress failed. */
  receive(message: InboundMessage): Promise<IngressOutcome>;
  /** Aborts when the channel stops, ending every open stream. */
  stopSignal(): AbortSignal;
  /** Where uploads go; absent: the upload route answers that files are off. */
  uploads?: WebUploads;
}

export function createWebRoutes(deps: WebRoutesDeps): HttpRoute[] {
  const bodySchema = webMessageBodySchema(deps.maxMessageChars);
  const messagesPerSession = new KeyedRateLimiter({ perMinute: deps.messagesPerSessionPerMinute });
  const uploadsPerSession = new KeyedRateLimiter({ perMinute: deps.messagesPerSessionPerMinute });

  const postMessage: HttpRoute = {
    method: "POST",
    path: WEB_MESSAGES_PATH,
    handle: async function handleWebMessage(request: Request): Promise<Response> {
      let raw: string;
      try {
        raw = await readBodyText(request, MAX_BODY_BYTES);
      } catch (error) {
        if (error instanceof PayloadTooLargeError)
          return problem(413, "payload_too_large", "The message body is over 64 KiB.");
        throw error;
      }
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        return problem(400, "input_invalid", "Expected a JSON body {sessionId, clientMessageId, text}.");
      }
      const parsed = bodySchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const field = issue?.path.join(".") || "body";
        return problem(400, "input_invalid", `${field}: ${issue?.message ?? "invalid"}`);
      }
      const body = parsed.data;
      const userId = deps.userIdOf(body.sessionId);
      const unknown = body.files?.find((f) => !deps.uploads?.find(userId, f.uploadId));
      if (unknown)
        return problem(
          400,
          "input_invalid",
          `files: "${unknown.name}" was not uploaded by this session (or too long ago); upload it again.`,
        );
      const decision = messagesPerSession.take(userId, deps.clock.now());
      if (!decision.allowed) {
        const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
        return problem(
          429,
          "rate_limited",
          `Too many messages from this session; wait ${seconds} s and send it again.`,
          { "retry-after": String(seconds) },
        );
      }
      // The message's place in the transcript: when it was received, as the stored transcript has
      // it. The run may answer before receive returns; its answer is stamped later all the same.
      const receivedAtMs = deps.clock.now();
      let outcome: IngressOutcome;
      try {
        outcome = await deps.receive(
          toInboundMessage(body, userId, receivedAtMs, (id) => deps.uploads?.find(userId, id)),
        );
      } catch (error) {
        if (isSwitchboardError(error, "idempotency_conflict"))
          return problem(
            409,
            "idempotency_conflict",
            `clientMessageId ${body.clientMessageId} was already used for a different message in this session; send new text with a new id.`,
          );
        if (isSwitchboardError(error, "runtime_closed") || isSwitchboardError(error, "platform_unavailable"))
          return problem(
            503,
            "unavailable",
            "The gateway is not accepting messages now; send it again shortly.",
          );
        return problem(
          500,
          "ingress_failed",
          "The message was not recorded; send it again (it will not be duplicated).",
        );
      }
      // The message carries its uploads: they no longer count against the pending bounds.
      const carried = body.files?.map((f) => f.uploadId) ?? [];
      deps.uploads?.attached(userId, carried);
      // A press shows nothing in the transcript; its notice is in the outcome, for the page to show.
      if (body.action !== undefined) return Response.json(outcome, { status: 202 });
      const nowMs = deps.clock.now();
      // The message is recorded; a transcript that cannot load now is loaded by the next stream.
      await deps.transcripts.load(userId, nowMs).catch(() => {});
      const files = (body.files ?? []).flatMap((f) => {
        const upload = deps.uploads?.find(userId, f.uploadId);
        return upload ? [webFileOf({ ...upload, name: f.name })] : [];
      });
      deps.transcripts.append(userId, {
        messageId: body.clientMessageId,
        role: "user",
        text: body.text ?? "",
        atMs: receivedAtMs,
        ...(files.length > 0 ? { files } : {}),
      });
      // A command's reply is in the outcome too, but it reaches the page the way every answer does:
      // ingress enqueued it, and the outbox sends it here. Showing it now would show it twice.
      return Response.json(outcome, { status: 202 });
    },
  };

  const stream: HttpRoute = {
    method: "GET",
    path: WEB_STREAM_PATH,
    handle: async function handleWebStream(request: Request): Promise<Response> {
      const userId = userOf(request, deps.userIdOf);
      if (userId instanceof Response) return userId;
      try {
        await deps.transcripts.load(userId, deps.clock.now());
      } catch {
        return problem(503, "unavailable", "The transcript could not be read now; reconnect shortly.");
      }
      return eventStreamResponse({
        signal: AbortSignal.any([request.signal, deps.stopSignal()]),
        heartbeatMs: deps.heartbeatMs,
        open: (write) =>
          deps.transcripts.listen(userId, deps.clock.now(), (event) =>
            write(`data: ${JSON.stringify(event)}\n\n`),
          ),
      });
    },
  };

  const upload: HttpRoute = {
    method: "POST",
    path: WEB_UPLOADS_PATH,
    handle: async function handleWebUpload(request: Request, context?: HttpRouteContext): Promise<Response> {
      const uploads = deps.uploads;
      if (!uploads) return problem(404, "not_found", "File uploads are not enabled on this gateway.");
      const userId = userOf(request, deps.userIdOf);
      if (userId instanceof Response) return userId;
      const tooLarge = () => problem(413, "payload_too_large", fileTooLargeText(uploads.maxFileBytes));
      const declared = Number(request.headers.get("content-length") ?? Number.NaN);
      if (Number.isFinite(declared) && declared > uploads.maxFileBytes) return tooLarge();
      const decision = uploadsPerSession.take(userId, deps.clock.now());
      if (!decision.allowed) {
        const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
        return problem(429, "rate_limited", `Too many uploads from this session; wait ${seconds} s.`, {
          "retry-after": String(seconds),
        });
      }
      if (!request.body)
        return problem(400, "input_invalid", "The upload has no body; send the file's bytes.");
      try {
        const put = await uploads.put(userId, streamChunks(request.body), {
          client: context?.client ?? "unknown",
          declaredBytes: Number.isFinite(declared) ? declared : null,
          nowMs: deps.clock.now(),
        });
        if (put.kind === "refused") {
          const seconds = Math.max(1, Math.ceil(put.refusal.retryAfterMs / 1000));
          return problem(429, "too_many_pending_uploads", pendingRefusalText(put.refusal), {
            "retry-after": String(seconds),
          });
        }
        return Response.json({ uploadId: put.file.id, sizeBytes: put.file.sizeBytes }, { status: 201 });
      } catch (error) {
        if (isUploadTooLarge(error) || isServerBodyLimitError(error) || error instanceof PayloadTooLargeError)
          return tooLarge();
        throw error;
      }
    },
  };

  const file: HttpRoute = {
    method: "GET",
    path: `${WEB_FILES_PATH}/:fileId`,
    handle: async function handleWebFile(request: Request): Promise<Response> {
      const userId = userOf(request, deps.userIdOf);
      if (userId instanceof Response) return userId;
      const fileId = new URL(request.url).pathname.slice(WEB_FILES_PATH.length + 1);
      // The same answer for a file of another session as for none at all: ids are not disclosed.
      const notFound = () =>
        problem(404, "not_found", "This chat shows no such file, or it is no longer stored.");
      if (!deps.uploads) return notFound();
      try {
        await deps.transcripts.load(userId, deps.clock.now());
      } catch {
        return problem(503, "unavailable", "The transcript could not be read now; try again shortly.");
      }
      const shown = deps.transcripts.fileOf(userId, fileId);
      const bytes = shown ? await deps.uploads.read(fileId) : null;
      if (!shown || !bytes) return notFound();
      return new Response(bytes as Uint8Array<ArrayBuffer>, { headers: webFileHeaders(shown) });
    },
  };

  return [postMessage, stream, upload, file];
}

function problem(status: number, code: string, message: string, headers?: Record<string, string>): Response {
  return Response.json(
    { error: { code, message } },
    { status, headers: { "cache-control": "no-store", ...headers } },
  );
}

/**
 * The user id of the session id in its header, or the 400 that says how to send it (never in the
 * URL). The session id goes no further.
 */
function userOf(request: Request, userIdOf: WebUserIds): string | Response {
  const sessionId = request.headers.get(WEB_SESSION_HEADER) ?? "";
  return isSessionId(sessionId)
    ? userIdOf(sessionId)
    : problem(
        400,
        "input_invalid",
        `Send the session id in the ${WEB_SESSION_HEADER} header (16-128 characters of A-Z a-z 0-9 _ -), never in the URL.`,
      );
}
