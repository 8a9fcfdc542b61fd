/**
 * Media the emulated number holds: files users sent (for the webhook's media ids) and files the
 * business uploaded (`POST /{phone-number-id}/media`). `GET /{media-id}` describes one with a
 * short-lived download URL; the download itself needs the access token, as Meta's does.
 */
import { type FileFault, FileHost } from "../file-host.ts";
import { ERRORS, type GraphAnswer, graphError } from "./graph-errors.ts";
import { sha256Hex } from "./payloads.ts";

export type { FileFault } from "../file-host.ts";

/** Meta's upload limits by kind, and the types each kind takes. */
export const MEDIA_LIMITS = {
  image: { maxBytes: 5 * 1024 * 1024, types: ["image/jpeg", "image/png"] },
  sticker: { maxBytes: 500 * 1024, types: ["image/webp"] },
  audio: {
    maxBytes: 16 * 1024 * 1024,
    types: ["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"],
  },
  video: { maxBytes: 16 * 1024 * 1024, types: ["video/mp4", "video/3gpp"] },
  document: { maxBytes: 100 * 1024 * 1024, types: [] as string[] },
} as const;

export type MediaKind = keyof typeof MEDIA_LIMITS;

export interface StoredMedia {
  id: string;
  bytes: Uint8Array;
  mimeType: string;
  sha256: string;
  filename?: string;
  /** "user": arrived in a user's message; "business": uploaded through the API. */
  origin: "user" | "business";
}

/** Which kind a MIME type uploads as (anything else is a document). */
export function mediaKindOf(mimeType: string): MediaKind {
  const bare = mimeType.split(";")[0]?.trim() ?? "";
  if (bare === "image/webp") return "sticker";
  for (const kind of ["image", "audio", "video"] as const) {
    if ((MEDIA_LIMITS[kind].types as readonly string[]).includes(bare)) return kind;
  }
  return "document";
}

export class MediaStore {
  private readonly byId = new Map<string, StoredMedia>();
  private readonly host = new FileHost();
  private counter = 0;

  /** Stores bytes under a fresh numeric media id, as Meta's are. */
  add(
    bytes: Uint8Array,
    mimeType: string,
    origin: StoredMedia["origin"],
    filename?: string,
    fault?: FileFault,
  ): StoredMedia {
    this.counter += 1;
    const id = String(1_000_000_000_000_000 + this.counter);
    const media: StoredMedia = { id, bytes, mimeType, sha256: sha256Hex(bytes), origin };
    if (filename !== undefined) media.filename = filename;
    this.byId.set(id, media);
    this.host.add(id, bytes, fault);
    return media;
  }

  get(id: string): StoredMedia | undefined {
    return this.byId.get(id);
  }

  all(): StoredMedia[] {
    return [...this.byId.values()];
  }

  /** Refuses what Meta refuses: an unsupported type for the kind, or a file over the kind's limit. */
  checkUpload(bytes: Uint8Array, mimeType: string): GraphAnswer | null {
    const kind = mediaKindOf(mimeType);
    const limit = MEDIA_LIMITS[kind];
    if (bytes.byteLength === 0) return graphError(400, ERRORS.mediaUpload, "The uploaded file is empty.");
    if (bytes.byteLength > limit.maxBytes) {
      return graphError(
        400,
        ERRORS.mediaUpload,
        `Media file size too big. Max file size for ${kind} is ${limit.maxBytes} bytes; this file is ${bytes.byteLength} bytes.`,
      );
    }
    return null;
  }

  /** How many downloads of `id` began, and how many sent every byte. */
  downloads(id: string): { started: number; completed: number } {
    return this.host.downloads(id);
  }

  serve(id: string): Response {
    return this.host.serve(id);
  }
}
