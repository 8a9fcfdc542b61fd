/**
 * Images a tool returns (MCP image content) are delivered to the chat as photos: each is
 * stored in the blob store (its type sniffed from the bytes, never taken from the server) and
 * enqueued under a key per tool call and image, so a call run again sends none of them twice.
 */
import { isPhotoType } from "../../../channels/types.ts";
import { isSwitchboardError } from "../../errors.ts";
import { sniffMediaType } from "../../media/sniff.ts";
import { type BlobStore, bytesSource } from "../../runtime/blobs.ts";
import type { FileDelivery } from "../../runtime/store.ts";
import type { SendFileToolOptions } from "./send-file.ts";

export type ToolImagesOptions = Pick<
  SendFileToolOptions,
  "runId" | "destination" | "blobs" | "maxFileBytes" | "refusal" | "enqueue"
>;

/** Stores and enqueues `images` (base64 data); returns, per image, the note the model reads. */
export async function deliverToolImages(
  options: ToolImagesOptions,
  images: readonly { data: string }[],
  toolCallId: string,
  toolName: string,
): Promise<string[]> {
  const notes: string[] = [];
  const files: FileDelivery[] = [];
  for (const [index, image] of images.entries()) {
    const bytes = Buffer.from(image.data, "base64");
    let stored: Awaited<ReturnType<BlobStore["put"]>>;
    try {
      stored = await options.blobs.put(bytesSource(bytes), { maxBytes: options.maxFileBytes });
    } catch (error) {
      if (!isSwitchboardError(error, "blob_too_large")) throw error;
      notes.push("[image not sent: larger than the file limit (SWITCHBOARD_MAX_FILE_MB)]");
      continue;
    }
    const mimeType = await sniffMediaType(stored.head);
    if (!isPhotoType(mimeType)) {
      notes.push(`[image not sent: its bytes are ${mimeType}, not a JPEG, PNG or WebP photo]`);
      continue;
    }
    const extension = mimeType.slice("image/".length).replace("jpeg", "jpg");
    const file = {
      blobId: stored.id,
      filename: `${toolName}-${index + 1}.${extension}`,
      mimeType,
      sizeBytes: stored.sizeBytes,
    };
    const refusal = options.refusal(file);
    if (refusal !== null) {
      notes.push(`[image not sent: ${refusal}]`);
      continue;
    }
    files.push({
      key: `${options.runId}:file:${toolCallId}:${index + 1}`,
      ...options.destination,
      caption: "",
      ...file,
    });
    notes.push(`[image ${file.filename} sent to the chat as a photo]`);
  }
  if (files.length > 0) await options.enqueue(files);
  return notes;
}
