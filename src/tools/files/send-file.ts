/**
 * The `files` tool set: `send_file` sends a file to the chat the run answers in. The file is
 * stored in the blob store first; then its outbox record is enqueued in one fenced transaction
 * keyed by the tool call, so running the call again after a crash enqueues nothing twice and the
 * file shows once. Delivery follows in order with the run's other replies.
 */
import { type ToolSet, tool } from "ai";
import { z } from "zod";
import type { BlobStore } from "../../runtime/blobs.ts";
import type { FileDelivery, MessagePage } from "../../runtime/store.ts";
import type { GuardedGetOptions } from "../web/fetch.ts";
import {
  type FileToSend,
  findConversationFile,
  SEND_FILE,
  SendFileError,
  storeFromUrl,
} from "./store-file.ts";

export { SEND_FILE };

/** Where the run answers: its context's channel, account, reply target and replied-to message. */
export interface FileDestination {
  channel: string;
  account: string;
  target: string;
  replyTo?: string;
}

export interface SendFileToolOptions {
  runId: string;
  destination: FileDestination;
  blobs: BlobStore;
  /** SWITCHBOARD_MAX_FILE_MB in bytes: a larger download is refused. */
  maxFileBytes: number;
  /** web_fetch's rules for URLs (private addresses refused unless allowed); null: URLs are off. */
  fetch: GuardedGetOptions | null;
  /** The calling run's conversation, paged oldest first. */
  listMessages: (page: { afterOrder: number; limit: number }) => Promise<MessagePage>;
  /** Why the destination's channel cannot take this file (no files, over its limit); null when it can. */
  refusal: (file: FileToSend) => string | null;
  /** Enqueues the files for delivery, fenced (the run must still own itself). */
  enqueue: (files: FileDelivery[]) => Promise<string[]>;
}

/** Longest caption accepted; a platform with a shorter limit gets it as a message after the file. */
export const MAX_CAPTION_CHARS = 4000;

// Latin-1 only, as in read_output (src/runtime/bounded-output.ts): a photo's request stays 8-bit.
const sendFileInput = z.object({
  file: z
    .string()
    .min(1)
    .max(300)
    .optional()
    .describe(
      "A file this conversation already has: its name as shown in an [attachment ...], [image ...] or [file ...] label, or a name send_file returned.",
    ),
  url: z.string().min(1).max(4096).optional().describe("Or a full http(s) URL to download the file from."),
  filename: z.string().min(1).max(200).optional().describe("The name to show; default: the file's own."),
  caption: z.string().max(MAX_CAPTION_CHARS).optional().describe("Text shown with the file (Markdown)."),
});

/** A name to show: its last path segment, without control characters. */
function displayName(name: string): string {
  const base = name.split(/[\\/]/).filter(Boolean).at(-1) ?? "";
  return (
    base
      .replace(/\p{Cc}/gu, "")
      .trim()
      .slice(0, 200) || "file"
  );
}

export function createFileTools(options: SendFileToolOptions): ToolSet {
  return {
    [SEND_FILE]: tool({
      description:
        "Sends a file to this chat: one the conversation already has (by name), or one downloaded from a URL. " +
        "Photos show as photos, voice notes (OGG/Opus) as voice notes, anything else as a document. " +
        "The file arrives in order with your messages.",
      inputSchema: sendFileInput,
      execute: async ({ file, url, filename, caption }, { toolCallId, abortSignal }) => {
        if ((file === undefined) === (url === undefined)) {
          throw new SendFileError(
            "Give either `file` (a file of this conversation) or `url`, not both or neither.",
          );
        }
        let stored: FileToSend;
        if (url !== undefined) {
          if (options.fetch === null) {
            throw new SendFileError(
              "Downloading from URLs is off on this gateway (SWITCHBOARD_WEB_FETCH=off); send a file of this conversation instead.",
            );
          }
          stored = await storeFromUrl(url, {
            ...options.fetch,
            blobs: options.blobs,
            maxFileBytes: options.maxFileBytes,
            ...(filename === undefined ? {} : { filename }),
            ...(abortSignal ? { signal: abortSignal } : {}),
          });
        } else {
          const found = await findConversationFile(options.listMessages, file!);
          if (!found.file) {
            throw new SendFileError(
              `This conversation has no file named "${file}". ` +
                (found.known.length > 0
                  ? `Files it has: ${found.known.slice(-20).join(", ")}.`
                  : "It has no files; give a `url` instead."),
            );
          }
          if ((await options.blobs.stat(found.file.blobId)) === null) {
            throw new SendFileError(
              `The file "${file}" is no longer stored (removed by retention); it cannot be sent.`,
            );
          }
          stored = found.file;
        }
        const named = { ...stored, filename: displayName(filename ?? stored.filename) };
        const refusal = options.refusal(named);
        if (refusal !== null) throw new SendFileError(refusal);
        await options.enqueue([
          {
            key: `${options.runId}:file:${toolCallId}`,
            ...options.destination,
            caption: caption ?? "",
            ...named,
          },
        ]);
        return {
          sent: named,
          note: "Queued: the chat gets it in order with your messages. Do not send it again.",
        };
      },
    }),
  };
}
