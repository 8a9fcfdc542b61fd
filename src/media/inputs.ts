import { isSwitchboardError } from "../errors.ts";
import { type BlobStore, bytesSource, type StoredBlob } from "../runtime/blobs.ts";
import type { MediaInputs, ModelInputKind } from "../runtime/media.ts";
import type { FilePart, PreparedFile } from "../runtime/types.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { pdfText } from "./pdf-text.ts";
import { IMAGE_TYPES, isTextType, sniffMediaType } from "./sniff.ts";

/** An attachment's bytes as a channel serves them. */
export interface RemoteFile {
  body: AsyncIterable<Uint8Array>;
  /** What the platform states before sending (Content-Length, file_size); checked before reading. */
  sizeBytes?: number;
}

/**
 * Opens an attachment for reading, by the run's context (which channel and account) and the
 * part's `ref`. Throws a SwitchboardError: `retryable` for an outage (5xx, timeout, reset),
 * not for a refusal (404, no access).
 */
export type FileOpener = (context: unknown, ref: string, signal: AbortSignal) => Promise<RemoteFile>;

/** Turns audio into text (SWITCHBOARD_TRANSCRIPTION_MODEL). */
export type Transcriber = (audio: Uint8Array, mediaType: string, signal: AbortSignal) => Promise<string>;

export interface MediaLimits {
  /** Largest file downloaded, in bytes (SWITCHBOARD_MAX_FILE_MB). */
  maxFileBytes: number;
  /**
   * Longest voice note or audio transcribed, in seconds (SWITCHBOARD_MAX_AUDIO_MINUTES), judged by
   * the length the platform states; a longer one is stored and the model gets a note instead.
   */
  maxAudioSeconds: number;
  /** Longest text inlined into the prompt, in characters. */
  maxInlineChars: number;
  /** Deadline of one download attempt. */
  downloadTimeoutMs: number;
  /** Waits before the 2nd, 3rd… attempt of a download that failed with an outage. */
  retryDelaysMs: readonly number[];
  /**
   * Images decoded and scaled at once across all runs: each holds its original and its pixels
   * in memory (a 10 MB photo is ~30 MB decoded), so this bounds the gateway's peak.
   */
  maxConcurrentImages: number;
}

export const DEFAULT_MEDIA_LIMITS: MediaLimits = {
  maxFileBytes: 20 * 1024 * 1024,
  maxAudioSeconds: 10 * 60,
  maxInlineChars: 20_000,
  downloadTimeoutMs: 60_000,
  retryDelaysMs: [1000, 4000],
  maxConcurrentImages: 2,
};

export interface MediaInputsOptions {
  blobs: BlobStore;
  /** Times the waits between download attempts. Default the system clock. */
  clock?: Clock;
  open: FileOpener;
  accepts: ReadonlySet<ModelInputKind>;
  limits: MediaLimits;
  logger: Logger;
  transcribe?: Transcriber;
  /** Bytes downloaded per conversation, against `limit` (SWITCHBOARD_MAX_CONVERSATION_MB). */
  conversationQuota?: {
    limitBytes: number;
    used(conversationId: string): Promise<number>;
    add(conversationId: string, bytes: number): Promise<void>;
  };
  /** Whether this conversation was already told how to set up transcription; marks it told. */
  firstTranscriptionHint?: (conversationId: string) => Promise<boolean>;
}

const TRANSCRIPTION_HINT =
  "Voice notes are not transcribed: set SWITCHBOARD_TRANSCRIPTION_MODEL (for example openai-compatible:whisper-1) to have them read.";

/** The media pipeline the runtime prepares attachments with (src/runtime/media.ts). */
export function createMediaInputs(options: MediaInputsOptions): MediaInputs {
  const { blobs, limits, logger } = options;
  const clock = options.clock ?? systemClock;
  const mb = sizeText;
  const limitText = mb(limits.maxFileBytes);
  const imageSlots = new Slots(limits.maxConcurrentImages);

  const refusedTooLarge = (name: string, sizeBytes: number | undefined): PreparedFile => ({
    status: "refused",
    note: `the file is larger than the ${limitText} limit per file${sizeBytes === undefined ? "" : ` (${mb(sizeBytes)})`}; it was not downloaded`,
    userNotice: `${name} is larger than the ${limitText} limit per file, so it was not read.`,
  });

  async function download(
    part: FilePart,
    context: unknown,
    signal: AbortSignal,
  ): Promise<StoredBlob | PreparedFile> {
    const name = displayName(part);
    let lastError = "";
    for (let attempt = 0; ; attempt++) {
      const deadline = AbortSignal.timeout(limits.downloadTimeoutMs);
      const attemptSignal = AbortSignal.any([signal, deadline]);
      try {
        const remote = await options.open(context, part.ref, attemptSignal);
        if (remote.sizeBytes !== undefined && remote.sizeBytes > limits.maxFileBytes) {
          return refusedTooLarge(name, remote.sizeBytes);
        }
        return await blobs.put(abortable(remote.body, attemptSignal), { maxBytes: limits.maxFileBytes });
      } catch (error) {
        if (signal.aborted) throw error;
        if (isSwitchboardError(error, "blob_too_large")) return refusedTooLarge(name, undefined);
        const timedOut = deadline.aborted;
        const retryable = timedOut || !isSwitchboardError(error) || error.retryable;
        lastError = timedOut
          ? `the download did not finish within ${durationText(limits.downloadTimeoutMs)}`
          : error instanceof Error
            ? error.message
            : String(error);
        logger.warn("media.download_failed", {
          ref: part.ref,
          attempt: attempt + 1,
          retryable,
          error: lastError,
        });
        const delay = limits.retryDelaysMs[attempt];
        if (!retryable || delay === undefined) break;
        // Stopped runs end the wait early; the next attempt then sees the aborted signal.
        await clock.sleep(delay, signal).catch(() => {});
      }
    }
    return {
      status: "failed",
      note: `the file could not be fetched: ${lastError}`,
      userNotice: `${name} could not be fetched (${lastError}).`,
    };
  }

  async function derive(
    part: FilePart,
    stored: StoredBlob,
    mediaType: string,
    conversationId: string,
    signal: AbortSignal,
  ): Promise<PreparedFile> {
    const base = { status: "fetched" as const, blobId: stored.id, mediaType, sizeBytes: stored.sizeBytes };
    const name = displayName(part);
    const stated = part.mediaType;
    const lying =
      stated !== undefined && stated !== mediaType && kindOf(stated) !== kindOf(mediaType)
        ? `it was sent as ${stated}, but its bytes are ${mediaType}`
        : undefined;
    if (IMAGE_TYPES.has(mediaType)) {
      try {
        const copy = await imageSlots.run(async () => {
          // From its file when the store has one: twenty large photos at once would otherwise
          // each hold their original in memory until the collector frees it.
          const path = blobs.localPath?.(stored.id);
          const source = path && (await blobs.stat(stored.id)) ? path : await blobs.read(stored.id);
          if (!source) throw new Error("the stored file is gone");
          // sharp and libvips add about 28 MB to a process, so only one that meets a photo loads them.
          const { scaleForModel } = await import("./image.ts");
          const scaled = await scaleForModel(source);
          return await blobs.put(bytesSource(scaled.bytes), { maxBytes: Number.MAX_SAFE_INTEGER });
        });
        return { ...base, imageBlobId: copy.id };
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        logger.warn("media.image_unreadable", { blobId: stored.id, error: why });
        return {
          ...base,
          note: `the image could not be read (${why}); it is stored but not shown`,
          userNotice: `${name} could not be read as an image (${why}).`,
        };
      }
    }
    const bounded = (text: string) =>
      text.length > limits.maxInlineChars
        ? `${text.slice(0, limits.maxInlineChars)}\n[… ${text.length - limits.maxInlineChars} more characters not shown]`
        : text;
    if (isTextType(mediaType)) {
      const bytes = await blobs.read(stored.id);
      return { ...base, text: bounded(new TextDecoder().decode(bytes ?? new Uint8Array())) };
    }
    if (mediaType === "application/pdf") {
      if (options.accepts.has("file")) return base;
      try {
        const text = await pdfText((await blobs.read(stored.id)) ?? new Uint8Array());
        if (text !== "") return { ...base, text: bounded(text) };
        return {
          ...base,
          note: "a PDF with no text to extract (scanned pages?), which this model cannot read as a file",
          userNotice: `${name} has no text I can read (scanned pages?); paste the text you need instead.`,
        };
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        logger.warn("media.pdf_unreadable", { blobId: stored.id, error: why });
        return {
          ...base,
          note: `the PDF could not be read (${why}); it is stored but not shown`,
          userNotice: `${name} could not be read as a PDF (${why}).`,
        };
      }
    }
    if (mediaType.startsWith("audio/") || (part.kind === "voice" && mediaType === "video/webm")) {
      if (!options.transcribe) {
        const first = (await options.firstTranscriptionHint?.(conversationId)) ?? true;
        return {
          ...base,
          note: "a voice note or audio file that was not transcribed (no transcription model is configured)",
          ...(first ? { userNotice: TRANSCRIPTION_HINT } : {}),
        };
      }
      const seconds = part.durationSeconds;
      if (seconds !== undefined && seconds > limits.maxAudioSeconds) {
        const limit = minutesText(limits.maxAudioSeconds);
        logger.warn("media.audio_too_long", { blobId: stored.id, durationSeconds: seconds });
        return {
          ...base,
          note: `a recording of ${minutesText(seconds)}, longer than the ${limit} transcription limit; it was stored but not transcribed`,
          userNotice: `${name} is ${minutesText(seconds)} long, over the ${limit} limit for transcription, so it was not read; send a shorter one or type what it says.`,
        };
      }
      try {
        const bytes = await blobs.read(stored.id);
        const transcript = await options.transcribe(bytes ?? new Uint8Array(), mediaType, signal);
        return { ...base, text: transcript.slice(0, limits.maxInlineChars), transcript: true };
      } catch (error) {
        if (signal.aborted) throw error;
        const why = error instanceof Error ? error.message : String(error);
        logger.warn("media.transcription_failed", { blobId: stored.id, error: why });
        return {
          ...base,
          note: `the audio could not be transcribed (${why})`,
          userNotice: `${name} could not be transcribed (${why}).`,
        };
      }
    }
    const why = lying ?? `it is ${mediaType}`;
    return {
      ...base,
      note: `stored, not opened: ${why}`,
      userNotice: `${name} was stored but not opened: ${why}.`,
    };
  }

  return {
    accepts: options.accepts,
    read: (blobId) => blobs.read(blobId),
    async prepare({ part, context, conversationId, signal }) {
      if (part.sizeBytes !== undefined && part.sizeBytes > limits.maxFileBytes) {
        logger.warn("media.refused_too_large", { ref: part.ref, sizeBytes: part.sizeBytes });
        return refusedTooLarge(displayName(part), part.sizeBytes);
      }
      const quota = options.conversationQuota;
      if (quota) {
        const used = await quota.used(conversationId);
        if (used + (part.sizeBytes ?? 0) > quota.limitBytes) {
          logger.warn("media.refused_conversation_quota", { ref: part.ref, usedBytes: used });
          const limit = sizeText(quota.limitBytes);
          return {
            status: "refused",
            note: `this conversation has used its ${limit} of files; the file was not downloaded`,
            userNotice: `${displayName(part)} was not read: this conversation has reached its limit of ${limit} of files (start a new one with /new).`,
          };
        }
      }
      const fetched = await download(part, context, signal);
      if (!("id" in fetched)) return fetched;
      await quota?.add(conversationId, fetched.sizeBytes);
      const mediaType = await sniffMediaType(fetched.head);
      return await derive(part, fetched, mediaType, conversationId, signal);
    },
  };
}

function sizeText(bytes: number): string {
  const round = (n: number) => Math.round(n * 10) / 10;
  if (bytes >= 1024 * 1024) return `${round(bytes / 1024 / 1024)} MB`;
  if (bytes >= 1024) return `${round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** `90` → `1 min 30 s`, `600` → `10 min`, `42` → `42 s`. */
function minutesText(seconds: number): string {
  const whole = Math.round(seconds);
  const minutes = Math.floor(whole / 60);
  const rest = whole % 60;
  if (minutes === 0) return `${rest} s`;
  return rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`;
}

function durationText(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

/** How the user knows the file: its name, else what it was. */
export function displayName(part: FilePart): string {
  if (part.name) return `"${part.name}"`;
  switch (part.kind) {
    case "photo":
      return "The photo";
    case "voice":
      return "The voice note";
    case "sticker":
      return "The sticker";
    default:
      return "The file";
  }
}

function kindOf(mediaType: string): string {
  return mediaType.split("/")[0] ?? mediaType;
}

/** Ends the iteration with the signal's reason when it aborts between chunks. */
async function* abortable(body: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    signal.throwIfAborted();
    yield chunk;
  }
  signal.throwIfAborted();
}

/** At most `size` tasks at once; the others wait in order. */
class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    }
  }
}
