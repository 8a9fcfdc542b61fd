/**
 * Files the browser uploads before it sends the message that carries them. The bytes stream into
 * the gateway's blob store (bounded, never held whole); the message then names them by id, and
 * only a session that uploaded a file may attach it. Sessions are named here by the user id derived
 * from the session id (user-id.ts), never by the session id itself. The run fetches it like any platform's file
 * (`openFile("upload:<id>")`), so the type is sniffed and the limits applied in one place.
 */
import { isSwitchboardError, SwitchboardError } from "../../src/errors.ts";
import type { RemoteFile } from "../types.ts";
import {
  defaultPendingLimits,
  type PendingRefusal,
  type PendingUploadLimits,
  PendingUploads,
} from "./pending-uploads.ts";

/**
 * Where uploads are kept: the gateway's BlobStore (src/runtime/blobs.ts), named by the part of
 * it this channel uses (channels/ does not import the runtime).
 */
export interface UploadStore {
  /** Streams `source` in; throws `blob_too_large` (nothing kept) past `maxBytes`. */
  put(
    source: AsyncIterable<Uint8Array>,
    options: { maxBytes: number },
  ): Promise<{ id: string; sizeBytes: number; head: Uint8Array }>;
  /** The bytes; null when gone. */
  read(id: string): Promise<Uint8Array | null>;
}

/** A blob id: 64 lower-case hex digits (a sha256). */
const UPLOAD_ID = /^[0-9a-f]{64}$/;

export const UPLOAD_REF_PREFIX = "upload:";

export interface WebUploadOptions {
  blobs: UploadStore;
  /** Largest file accepted (SWITCHBOARD_MAX_FILE_MB), in bytes. */
  maxFileBytes: number;
  /** Uploads one session's message may name: its newest this many; default 20. */
  maxPerSession?: number;
  /** Sessions remembered; default 1000 (the oldest is forgotten first). */
  maxSessions?: number;
  /**
   * Bounds on uploads not yet sent with a message, per session, per client address and in all
   * (defaultPendingLimits: 20 files or 100 MB, 50 or 250 MB, 1000 or 2 GB, for an hour).
   */
  pending?: PendingUploadLimits;
  /**
   * The type of a file from its first bytes (src/media/sniff.ts), so the transcript shows an
   * uploaded photo as one; never the browser's word. Absent: every upload is a download.
   */
  sniff?: (head: Uint8Array) => Promise<string>;
}

export interface UploadedFile {
  id: string;
  sizeBytes: number;
  /** Sniffed from the bytes. */
  mimeType: string;
}

/** Who is uploading, for the bounds on pending uploads. */
export interface UploadOrigin {
  /** The client's address as the server keys it (never from a header); "unknown" without one. */
  client: string;
  /** The body's Content-Length, when the request declared one. */
  declaredBytes: number | null;
  nowMs: number;
}

export class WebUploads {
  readonly maxFileBytes: number;
  private readonly bySession = new Map<string, Map<string, UploadedFile>>();
  private readonly pending: PendingUploads;

  constructor(private readonly options: WebUploadOptions) {
    this.maxFileBytes = options.maxFileBytes;
    this.pending = new PendingUploads(options.pending ?? defaultPendingLimits(options.maxFileBytes));
  }

  /**
   * Streams `body` into the blob store for `sessionId`, unless it would pass a bound on pending
   * uploads (then `refused`, and nothing is read). Throws `blob_too_large` past the file limit
   * (nothing kept).
   */
  async put(
    sessionId: string,
    body: AsyncIterable<Uint8Array>,
    origin: UploadOrigin,
  ): Promise<{ kind: "stored"; file: UploadedFile } | { kind: "refused"; refusal: PendingRefusal }> {
    const reserved = this.pending.reserve(
      sessionId,
      origin.client,
      Math.min(origin.declaredBytes ?? this.options.maxFileBytes, this.options.maxFileBytes),
      origin.nowMs,
    );
    if ("refused" in reserved) return { kind: "refused", refusal: reserved.refused };
    let stored: Awaited<ReturnType<UploadStore["put"]>>;
    try {
      stored = await this.options.blobs.put(body, { maxBytes: this.options.maxFileBytes });
    } catch (error) {
      this.pending.release(reserved.reservation);
      throw error;
    }
    this.pending.settle(reserved.reservation, stored.id, stored.sizeBytes);
    const mimeType = (await this.options.sniff?.(stored.head)) ?? "application/octet-stream";
    const file = { id: stored.id, sizeBytes: stored.sizeBytes, mimeType };
    let files = this.bySession.get(sessionId);
    if (files) this.bySession.delete(sessionId);
    files ??= new Map();
    this.bySession.set(sessionId, files);
    files.set(file.id, file);
    const maxPerSession = this.options.maxPerSession ?? 20;
    for (const oldest of files.keys()) {
      if (files.size <= maxPerSession) break;
      files.delete(oldest);
    }
    for (const oldest of this.bySession.keys()) {
      if (this.bySession.size <= (this.options.maxSessions ?? 1000)) break;
      this.bySession.delete(oldest);
    }
    return { kind: "stored", file };
  }

  /** A message of `sessionId` carries these uploads: they no longer count as pending. */
  attached(sessionId: string, ids: readonly string[]): void {
    this.pending.attached(sessionId, ids);
  }

  /** The upload `id` of `sessionId`; undefined when this session did not upload it (or it was forgotten). */
  find(sessionId: string, id: string): UploadedFile | undefined {
    return this.bySession.get(sessionId)?.get(id);
  }

  /** A stored blob's bytes (a file the agent sent, or an upload); null when it is not stored. */
  async read(id: string): Promise<Uint8Array | null> {
    return UPLOAD_ID.test(id) ? await this.options.blobs.read(id) : null;
  }

  /** The bytes of an upload, for the run that prepares it. */
  async open(ref: string): Promise<RemoteFile> {
    const id = ref.slice(UPLOAD_REF_PREFIX.length);
    const bytes =
      ref.startsWith(UPLOAD_REF_PREFIX) && UPLOAD_ID.test(id) ? await this.options.blobs.read(id) : null;
    if (!bytes)
      throw new SwitchboardError(
        "platform_rejected",
        "the uploaded file is no longer stored; upload it again",
      );
    return {
      body: (async function* () {
        yield bytes;
      })(),
      sizeBytes: bytes.byteLength,
    };
  }
}

export function isUploadTooLarge(error: unknown): boolean {
  return isSwitchboardError(error, "blob_too_large");
}

/** The 413's message: the limit in MB and the setting that sets it. */
export function fileTooLargeText(maxFileBytes: number): string {
  const mb = Math.round((maxFileBytes / 1024 / 1024) * 10) / 10;
  return `The file is larger than the ${mb} MB limit per file (SWITCHBOARD_MAX_FILE_MB).`;
}
