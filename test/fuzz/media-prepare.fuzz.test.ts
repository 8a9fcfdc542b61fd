/**
 * The whole preparation of an attachment (download, blob store, sniffing, scaling) on hostile
 * files: real images truncated or with flipped bytes, pixel bombs, archives and executables sent
 * under a lying platform type. Whatever arrives, `prepare` resolves (never throws, never crashes
 * the process) with an outcome the model can use: content it can read, or a note saying why not
 * (and a line for the user). Archives and executables are stored and never opened.
 */
import { afterAll, expect, test } from "bun:test";
import fc from "fast-check";
import sharp from "sharp";
import { MAX_IMAGE_SIDE } from "../../src/media/image.ts";
import { createMediaInputs, DEFAULT_MEDIA_LIMITS } from "../../src/media/inputs.ts";
import { IMAGE_TYPES } from "../../src/media/sniff.ts";
import type { AttachmentKind } from "../../src/runtime/types.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { recordingLogger } from "../support/logger.ts";
import { ELF, jpeg, pngClaiming } from "../support/media-files.ts";
import { tempDir } from "../support/runtime.ts";

const dir = tempDir("switchboard-media-fuzz-");
afterAll(() => dir.cleanup());
const blobs = new DirectoryBlobStore(dir.path);

const bytesOf = (...values: number[]) => new Uint8Array(values);
const withTail = (head: Uint8Array, size = 600) => {
  const out = new Uint8Array(size);
  out.set(head);
  for (let i = head.byteLength; i < size; i++) out[i] = (i * 31) % 256;
  return out;
};

/** Types that must never be opened (decoded, unpacked or run): stored, with a note. */
const NEVER_OPENED = new Set([
  "application/zip",
  "application/gzip",
  "application/x-elf",
  "application/x-msdownload",
  "application/x-7z-compressed",
  "application/x-tar",
]);

const image = sharp({ create: { width: 2600, height: 900, channels: 3, background: "#369" } });
const samples: Array<{ name: string; bytes: Uint8Array }> = [
  { name: "jpeg", bytes: await jpeg(2600, 900) },
  { name: "png", bytes: new Uint8Array(await image.clone().png().toBuffer()) },
  { name: "webp", bytes: new Uint8Array(await image.clone().webp().toBuffer()) },
  { name: "gif", bytes: new Uint8Array(await image.clone().gif().toBuffer()) },
  { name: "pixel bomb", bytes: await pngClaiming(40_000, 40_000) },
  { name: "zip", bytes: withTail(bytesOf(0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0, 8, 0)) },
  { name: "gzip", bytes: withTail(bytesOf(0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3)) },
  { name: "7z", bytes: withTail(bytesOf(0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4)) },
  { name: "elf", bytes: ELF },
  { name: "pe", bytes: withTail(bytesOf(0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff)) },
  { name: "pdf", bytes: new TextEncoder().encode("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n") },
  { name: "text", bytes: new TextEncoder().encode("plain words ".repeat(50)) },
];
const STATED = [
  undefined,
  "image/jpeg",
  "image/png",
  "application/pdf",
  "text/plain",
  "audio/ogg",
  "application/zip",
];
const KINDS: AttachmentKind[] = ["photo", "file", "voice", "audio", "sticker", "other"];

test("hostile files: prepare always resolves with usable content or a note; archives and executables are never opened", async () => {
  const served = new Map<string, Uint8Array>();
  const media = createMediaInputs({
    blobs,
    open: async (_context, ref) => {
      const bytes = served.get(ref)!;
      return {
        body: (async function* () {
          // In uneven pieces, as a network delivers them.
          for (let at = 0; at < bytes.byteLength; at += 777) yield bytes.subarray(at, at + 777);
        })(),
      };
    },
    accepts: new Set(["image"]),
    limits: { ...DEFAULT_MEDIA_LIMITS, retryDelaysMs: [] },
    logger: recordingLogger(),
  });
  let counter = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: samples.length - 1 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.option(fc.nat(), { nil: undefined }),
      fc.constantFrom(...STATED),
      fc.constantFrom(...KINDS),
      async (which, flips, cut, stated, kind) => {
        const sample = samples[which]!;
        const bytes = new Uint8Array(sample.bytes);
        // Keep the signature (the first 16 bytes) so the corruption lands inside a known format.
        for (const [at, value] of flips) bytes[16 + (at % Math.max(1, bytes.byteLength - 16))] = value;
        const input =
          cut === undefined ? bytes : bytes.subarray(0, 16 + (cut % Math.max(1, bytes.byteLength - 16)));
        counter += 1;
        const ref = `fuzz-${counter}`;
        served.set(ref, input);
        const prepared = await media.prepare({
          part: {
            type: "file",
            ref,
            kind,
            name: `${sample.name}.bin`,
            ...(stated ? { mediaType: stated } : {}),
          },
          context: {},
          runId: "r",
          conversationId: "c",
          signal: new AbortController().signal,
        });
        served.delete(ref);
        if (prepared.status !== "fetched") {
          expect(prepared.note.length).toBeGreaterThan(0);
          return;
        }
        if (NEVER_OPENED.has(prepared.mediaType)) {
          expect(prepared.note).toStartWith("stored, not opened");
          expect(prepared.userNotice).toContain("was stored but not opened");
          expect(prepared.text).toBeUndefined();
          expect(prepared.imageBlobId).toBeUndefined();
        }
        if (prepared.imageBlobId) {
          expect(IMAGE_TYPES.has(prepared.mediaType)).toBe(true);
          const scaled = await blobs.read(prepared.imageBlobId);
          const meta = await sharp(scaled!).metadata();
          expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBeLessThanOrEqual(MAX_IMAGE_SIDE);
          expect((meta.width ?? 0) * (meta.height ?? 0)).toBeGreaterThan(0);
        } else if (prepared.text === undefined) {
          // Nothing the model can read: it is told why, and so is the user.
          expect(prepared.note?.length ?? 0).toBeGreaterThan(0);
          expect(prepared.userNotice?.length ?? 0).toBeGreaterThan(0);
        }
        if (sample.name === "pixel bomb" && IMAGE_TYPES.has(prepared.mediaType)) {
          expect(prepared.imageBlobId).toBeUndefined();
        }
      },
    ),
    { numRuns: 200 },
  );
}, 120_000);
