/**
 * Where a file the agent sends comes from: a file the conversation already has (an attachment a
 * user sent, a file sent earlier), or a URL fetched under web_fetch's rules (every hop checked
 * against private addresses) and streamed into the blob store, bounded by SWITCHBOARD_MAX_FILE_MB.
 */

import { formatMegabytes } from "../../../outbox/media.ts";
import { isSwitchboardError } from "../../errors.ts";
import { sniffMediaType } from "../../media/sniff.ts";
import { type BlobStore, isBlobId } from "../../runtime/blobs.ts";
import type { MessagePage } from "../../runtime/store.ts";
import type { MessagePart } from "../../runtime/types.ts";
import { type GuardedGetOptions, guardedGet, WebFetchError } from "../web/fetch.ts";

/** A stored file, ready to enqueue. */
export interface FileToSend {
  blobId: string;
  filename: string;
  /** Sniffed from the bytes. */
  mimeType: string;
  sizeBytes: number;
}

/** A refusal the model can act on; the message says what and why. */
export class SendFileError extends Error {}

/** The tool name send_file records in its results; earlier results name files the model may send again. */
export const SEND_FILE = "send_file";

/**
 * Fetches `url` into the blob store. Refuses, before reading, a response whose stated length is
 * over `maxFileBytes`, and stops reading (keeping nothing) past it.
 */
export async function storeFromUrl(
  url: string,
  options: GuardedGetOptions & { blobs: BlobStore; maxFileBytes: number; filename?: string },
): Promise<FileToSend> {
  const tooLarge = (what: string) =>
    new SendFileError(
      `${what} is larger than the ${formatMegabytes(options.maxFileBytes)} limit for files (SWITCHBOARD_MAX_FILE_MB); it was not sent.`,
    );
  return await guardedGet(url, options, "*/*", async (response, finalUrl) => {
    const stated = Number(response.headers.get("content-length") ?? Number.NaN);
    if (Number.isFinite(stated) && stated > options.maxFileBytes) {
      await response.body?.cancel();
      throw tooLarge(`${finalUrl.href} (${formatMegabytes(stated)})`);
    }
    if (!response.body) throw new WebFetchError(`${finalUrl.href} answered without a body`);
    let stored: Awaited<ReturnType<BlobStore["put"]>>;
    try {
      const body = response.body as unknown as AsyncIterable<Uint8Array>;
      stored = await options.blobs.put(body, { maxBytes: options.maxFileBytes });
    } catch (error) {
      if (isSwitchboardError(error, "blob_too_large")) throw tooLarge(finalUrl.href);
      throw error;
    }
    if (stored.sizeBytes === 0)
      throw new SendFileError(`${finalUrl.href} is empty; there is nothing to send.`);
    return {
      blobId: stored.id,
      filename: options.filename ?? filenameOf(response, finalUrl),
      mimeType: await sniffMediaType(stored.head),
      sizeBytes: stored.sizeBytes,
    };
  });
}

/** The name the server gives (Content-Disposition), else the URL's last path segment, else "file". */
function filenameOf(response: Response, url: URL): string {
  const disposition = response.headers.get("content-disposition") ?? "";
  const star = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(disposition)?.[1];
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(disposition)?.[1];
  const fromHeader = star ? safeDecode(star.trim()) : plain?.trim();
  const fromPath = safeDecode(url.pathname.split("/").filter(Boolean).at(-1) ?? "");
  return (fromHeader || fromPath || "file").slice(0, 200);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** One file the conversation has, as the model can name it. */
interface KnownFile extends FileToSend {
  /** The name the model saw in the file's label. */
  label: string;
}

/** The files one message carries: fetched attachments, and files send_file sent. */
function filesOf(parts: readonly MessagePart[]): KnownFile[] {
  return parts.flatMap((part): KnownFile[] => {
    if (part.type === "file" && part.prepared?.status === "fetched") {
      const label =
        part.name ?? (part.kind === "photo" ? "photo" : part.kind === "voice" ? "voice note" : "file");
      return [
        {
          label,
          blobId: part.prepared.blobId,
          filename: part.name ?? label,
          mimeType: part.prepared.mediaType,
          sizeBytes: part.prepared.sizeBytes,
        },
      ];
    }
    if (part.type === "tool-result" && part.toolName === SEND_FILE && !part.isError) {
      const sent = (part.output as { sent?: Partial<FileToSend> } | null)?.sent;
      if (sent?.blobId && isBlobId(sent.blobId) && sent.filename && sent.mimeType && sent.sizeBytes) {
        return [{ label: sent.filename, ...(sent as FileToSend) }];
      }
    }
    return [];
  });
}

/** How many messages of a conversation are searched for a file, newest kept. */
const MAX_SCANNED_MESSAGES = 5_000;

/**
 * The newest file of the conversation named `reference` (its name as the model saw it, or its
 * blob id): only files that reached this conversation can be sent, never another's. Null when
 * there is none; `known` lists the names there are, for the error.
 */
export async function findConversationFile(
  listMessages: (page: { afterOrder: number; limit: number }) => Promise<MessagePage>,
  reference: string,
): Promise<{ file: FileToSend | null; known: string[] }> {
  const files: KnownFile[] = [];
  let afterOrder = 0;
  for (let scanned = 0; scanned < MAX_SCANNED_MESSAGES; ) {
    const page = await listMessages({ afterOrder, limit: 200 });
    for (const item of page.items) files.push(...filesOf(item.message.parts));
    scanned += page.items.length;
    if (page.nextAfterOrder === null) break;
    afterOrder = page.nextAfterOrder;
  }
  const wanted = reference.trim();
  const match = [...files]
    .reverse()
    .find((f) => f.blobId === wanted || f.label === wanted || f.filename === wanted);
  const { label: _label, ...file } = match ?? { label: "" };
  return { file: match ? (file as FileToSend) : null, known: [...new Set(files.map((f) => f.label))] };
}
