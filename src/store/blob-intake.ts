import { createHash } from "node:crypto";
import { SwitchboardError } from "../errors.ts";
import { BLOB_HEAD_BYTES, type StoredBlob } from "../runtime/blobs.ts";

/**
 * Reads `source` chunk by chunk, hashing and counting as it goes and handing each chunk to
 * `write`; keeps only the first bytes. Over `maxBytes` it stops with `blob_too_large`.
 */
export async function intake(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<StoredBlob> {
  const hash = createHash("sha256");
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let sizeBytes = 0;
  for await (const chunk of source) {
    if (chunk.byteLength === 0) continue;
    sizeBytes += chunk.byteLength;
    if (sizeBytes > maxBytes) {
      throw new SwitchboardError("blob_too_large", `the file is larger than the limit of ${maxBytes} bytes`, {
        details: { maxBytes },
      });
    }
    hash.update(chunk);
    if (headBytes < BLOB_HEAD_BYTES) {
      const piece = chunk.subarray(0, BLOB_HEAD_BYTES - headBytes);
      head.push(piece.slice());
      headBytes += piece.byteLength;
    }
    await write(chunk);
  }
  return { id: hash.digest("hex"), sizeBytes, head: concat(head, headBytes) };
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
