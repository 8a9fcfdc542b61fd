/**
 * Bad input through the real media pipeline: the Telegram adapter's openFile against the
 * emulator, a directory blob store, file-type and sharp. Each case ends in a clear outcome for
 * the model and the user, a log line, and nothing opened that should not be.
 */

import { afterAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { TelegramAdapter } from "../../channels/telegram/adapter.ts";
import { createMediaInputs, DEFAULT_MEDIA_LIMITS, type MediaLimits } from "../../src/media/inputs.ts";
import { sniffMediaType } from "../../src/media/sniff.ts";
import type { BlobStore } from "../../src/runtime/blobs.ts";
import type { ModelInputKind } from "../../src/runtime/media.ts";
import type { FilePart, PreparedFile } from "../../src/runtime/types.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { onePagePdf } from "../e2e/support/media.ts";
import { startTelegramEmulator } from "../emulators/telegram/index.ts";
import { recordingLogger } from "../support/logger.ts";
import { ELF, jpeg, pngClaiming } from "../support/media-files.ts";
import { tempDir } from "../support/runtime.ts";

const telegram = startTelegramEmulator();
const dir = tempDir("switchboard-media-");
const blobs = new DirectoryBlobStore(dir.path);
const adapter = new TelegramAdapter({
  mode: "polling",
  token: telegram.token,
  apiRoot: telegram.url,
  requestTimeoutMs: 2_000,
});
afterAll(async () => {
  await telegram.close();
  dir.cleanup();
});

function pipeline(
  limits: Partial<MediaLimits> = {},
  accepts: ModelInputKind[] = ["image"],
  store: BlobStore = blobs,
) {
  const logger = recordingLogger();
  const media = createMediaInputs({
    blobs: store,
    open: (_context, ref, signal) => adapter.openFile(ref, signal),
    accepts: new Set(accepts),
    limits: { ...DEFAULT_MEDIA_LIMITS, retryDelaysMs: [20, 20], ...limits },
    logger,
  });
  const prepare = (part: FilePart): Promise<PreparedFile> =>
    media.prepare({
      part,
      context: {},
      runId: "r",
      conversationId: "c",
      signal: new AbortController().signal,
    });
  return { media, prepare, logger };
}

let counter = 0;
function served(bytes: Uint8Array, fault?: Parameters<typeof telegram.files.add>[2]): string {
  counter += 1;
  const id = `file-${counter}`;
  telegram.files.add(id, bytes, fault);
  return id;
}

describe("bad input", () => {
  test("an executable sent as a photo: sniffed, stored, never opened; the user is told why", async () => {
    const { prepare, logger } = pipeline();
    const ref = served(ELF);
    const prepared = await prepare({
      type: "file",
      ref,
      kind: "file",
      name: "cat.jpg",
      mediaType: "image/jpeg",
    });
    expect(prepared).toMatchObject({ status: "fetched", mediaType: "application/x-elf" });
    if (prepared.status !== "fetched") throw new Error("expected fetched");
    expect(prepared.imageBlobId).toBeUndefined();
    expect(prepared.note).toBe(
      "stored, not opened: it was sent as image/jpeg, but its bytes are application/x-elf",
    );
    expect(prepared.userNotice).toContain('"cat.jpg" was stored but not opened');
    expect(await blobs.read(prepared.blobId)).toEqual(ELF);
    expect(logger.records.some((r) => r.event === "media.image_unreadable")).toBe(false);
  });

  test("a truncated JPEG becomes a note, not an image part", async () => {
    const { prepare, logger } = pipeline();
    const whole = await jpeg(640, 480);
    const ref = served(whole.subarray(0, Math.floor(whole.byteLength / 2)));
    const prepared = await prepare({ type: "file", ref, kind: "photo" });
    expect(prepared).toMatchObject({ status: "fetched", mediaType: "image/jpeg" });
    if (prepared.status !== "fetched") throw new Error("expected fetched");
    expect(prepared.imageBlobId).toBeUndefined();
    expect(prepared.note).toStartWith("the image could not be read");
    expect(prepared.userNotice).toStartWith("The photo could not be read as an image");
    // The scaler read it from its file: the note names no path of the gateway's.
    expect(prepared.note).not.toContain(dir.path);
    expect(logger.records.some((r) => r.event === "media.image_unreadable")).toBe(true);
  });

  test("a photo is scaled alike from its file and from a store without files (PostgreSQL's)", async () => {
    const withoutFiles: BlobStore = {
      put: (source, options) => blobs.put(source, options),
      read: (id) => blobs.read(id),
      stat: (id) => blobs.stat(id),
      delete: (id) => blobs.delete(id),
      list: () => blobs.list(),
    };
    const photo = await jpeg(2600, 1200);
    const fromFile = await pipeline().prepare({ type: "file", ref: served(photo), kind: "photo" });
    const fromBytes = await pipeline({}, ["image"], withoutFiles).prepare({
      type: "file",
      ref: served(photo),
      kind: "photo",
    });
    if (fromFile.status !== "fetched" || fromBytes.status !== "fetched") throw new Error("expected fetched");
    expect(fromFile.imageBlobId).toBeDefined();
    expect(fromBytes.imageBlobId).toBe(fromFile.imageBlobId!);
    const scaled = await sharp((await blobs.read(fromFile.imageBlobId!))!).metadata();
    expect([scaled.width, scaled.height]).toEqual([2048, 945]);
  });

  test("a pixel bomb is refused from its header, before its pixels are decoded", async () => {
    const { prepare } = pipeline();
    const ref = served(await pngClaiming(30_000, 30_000));
    const started = performance.now();
    const prepared = await prepare({ type: "file", ref, kind: "photo" });
    expect(performance.now() - started).toBeLessThan(5_000);
    if (prepared.status !== "fetched") throw new Error("expected fetched");
    expect(prepared.imageBlobId).toBeUndefined();
    expect(prepared.note).toContain("more than the 50000000 pixels allowed");
  });

  test("an image is scaled to 2048 px on its long side and kept beside the original", async () => {
    const { prepare, media } = pipeline();
    const original = await jpeg(1000, 4000);
    const prepared = await prepare({ type: "file", ref: served(original), kind: "photo" });
    if (prepared.status !== "fetched" || !prepared.imageBlobId) throw new Error("expected a scaled image");
    expect(await media.read(prepared.blobId)).toEqual(original);
    const meta = await sharp((await media.read(prepared.imageBlobId)) ?? undefined).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([512, 2048, "jpeg"]);
  });

  test("a file larger than the limit that did not state its size is cut off and nothing is kept", async () => {
    const { prepare } = pipeline({ maxFileBytes: 10_000 });
    const ref = served(new Uint8Array(50_000).fill(65));
    const prepared = await prepare({ type: "file", ref, kind: "file", name: "big.txt" });
    expect(prepared).toMatchObject({ status: "refused" });
    if (prepared.status === "fetched") throw new Error("expected refused");
    expect(prepared.userNotice).toBe(
      '"big.txt" is larger than the 9.8 KB limit per file, so it was not read.',
    );
  });

  test("a 500 is retried with backoff, and a later success is used", async () => {
    const { prepare } = pipeline();
    const ref = served(new TextEncoder().encode("hello\nworld\n"), { status: 500, times: 1 });
    const prepared = await prepare({ type: "file", ref, kind: "file", name: "a.txt" });
    expect(prepared).toMatchObject({ status: "fetched", mediaType: "text/plain", text: "hello\nworld\n" });
    expect(telegram.files.downloads(ref)).toEqual({ started: 2, completed: 1 });
  });

  test("a download that keeps failing with 500 ends, after its retries, in a note saying why", async () => {
    const { prepare, logger } = pipeline();
    const ref = served(new Uint8Array(100), { status: 500 });
    const prepared = await prepare({ type: "file", ref, kind: "file", name: "x.bin" });
    expect(prepared).toEqual({
      status: "failed",
      note: "the file could not be fetched: Telegram file download answered HTTP 500",
      userNotice: '"x.bin" could not be fetched (Telegram file download answered HTTP 500).',
    });
    expect(telegram.files.downloads(ref).started).toBe(3);
    expect(logger.records.filter((r) => r.event === "media.download_failed")).toHaveLength(3);
  });

  test("a download that hangs is cut off by its deadline and retried, then reported", async () => {
    const { prepare } = pipeline({ downloadTimeoutMs: 400 });
    const ref = served(new Uint8Array(100_000), { hang: true });
    const prepared = await prepare({ type: "file", ref, kind: "file", name: "slow.bin" });
    expect(prepared).toMatchObject({
      status: "failed",
      note: "the file could not be fetched: the download did not finish within 400 ms",
    });
    expect(telegram.files.downloads(ref)).toEqual({ started: 3, completed: 0 });
  });

  test("a long text file is inlined up to the bound, with a line saying how much was left out", async () => {
    const { prepare } = pipeline({ maxInlineChars: 100 });
    const ref = served(new TextEncoder().encode("x".repeat(1000)));
    const prepared = await prepare({ type: "file", ref, kind: "file", name: "long.txt" });
    if (prepared.status !== "fetched") throw new Error("expected fetched");
    expect(prepared.text).toBe(`${"x".repeat(100)}\n[… 900 more characters not shown]`);
  });

  test("a PDF for a model without file input becomes its text, bounded; a broken or textless one a note; with file input it is kept for a file part", async () => {
    const pdf = onePagePdf("Quarterly figures (draft): revenue rose");
    const without = await pipeline({}, ["image"]).prepare({ type: "file", ref: served(pdf), kind: "file" });
    expect(without).toMatchObject({ status: "fetched", mediaType: "application/pdf" });
    if (without.status !== "fetched") throw new Error("expected fetched");
    expect(without.text).toBe("Quarterly figures (draft): revenue rose");
    expect(without.note).toBeUndefined();
    const short = await pipeline({ maxInlineChars: 9 }, ["image"]).prepare({
      type: "file",
      ref: served(pdf),
      kind: "file",
    });
    if (short.status !== "fetched") throw new Error("expected fetched");
    expect(short.text).toBe("Quarterly\n[… 30 more characters not shown]");
    const broken = new TextEncoder().encode("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");
    const unreadable = await pipeline({}, ["image"]).prepare({
      type: "file",
      ref: served(broken),
      kind: "file",
    });
    if (unreadable.status !== "fetched") throw new Error("expected fetched");
    expect(unreadable.text).toBeUndefined();
    expect(unreadable.note).toContain("the PDF could not be read");
    expect(unreadable.userNotice).toContain("could not be read as a PDF");
    const withFiles = await pipeline({}, ["image", "file"]).prepare({
      type: "file",
      ref: served(pdf),
      kind: "file",
    });
    if (withFiles.status !== "fetched") throw new Error("expected fetched");
    expect(withFiles.note).toBeUndefined();
  });
});

describe("voice notes and the transcription limit", () => {
  const OGG = new Uint8Array([...new TextEncoder().encode("OggS"), 0, 2, ...new Array(22).fill(0), 0, 0]);
  const voice = new Uint8Array(4000);
  voice.set(OGG, 0);
  voice.set(new TextEncoder().encode("OpusHead"), 28);

  function transcribing(maxAudioSeconds: number) {
    const heard: number[] = [];
    const logger = recordingLogger();
    const media = createMediaInputs({
      blobs,
      open: (_context, ref, signal) => adapter.openFile(ref, signal),
      accepts: new Set(["image"]),
      limits: { ...DEFAULT_MEDIA_LIMITS, maxAudioSeconds, retryDelaysMs: [] },
      logger,
      transcribe: async (audio) => {
        heard.push(audio.byteLength);
        return "hello there";
      },
    });
    const prepare = (durationSeconds?: number) =>
      media.prepare({
        part: {
          type: "file",
          ref: served(voice),
          kind: "voice",
          ...(durationSeconds === undefined ? {} : { durationSeconds }),
        },
        context: {},
        runId: "r",
        conversationId: "c",
        signal: new AbortController().signal,
      });
    return { heard, logger, prepare };
  }

  test("a voice note over the limit is stored with a note for the model and a line for the user, never transcribed", async () => {
    const { heard, logger, prepare } = transcribing(600);
    const prepared = await prepare(11 * 60 + 5);
    expect(prepared).toMatchObject({ status: "fetched", mediaType: "audio/ogg; codecs=opus" });
    if (prepared.status !== "fetched") throw new Error("expected fetched");
    expect(prepared.text).toBeUndefined();
    expect(prepared.note).toBe(
      "a recording of 11 min 5 s, longer than the 10 min transcription limit; it was stored but not transcribed",
    );
    expect(prepared.userNotice).toBe(
      "The voice note is 11 min 5 s long, over the 10 min limit for transcription, so it was not read; send a shorter one or type what it says.",
    );
    expect(heard).toEqual([]);
    expect(await blobs.stat(prepared.blobId)).toEqual({ sizeBytes: voice.byteLength });
    expect(logger.records.some((r) => r.event === "media.audio_too_long")).toBe(true);
  });

  test("at the limit, or with no stated length, a voice note is transcribed", async () => {
    const { heard, prepare } = transcribing(90);
    const atLimit = await prepare(90);
    expect(atLimit).toMatchObject({ status: "fetched", text: "hello there", transcript: true });
    const unstated = await prepare();
    expect(unstated).toMatchObject({ status: "fetched", text: "hello there", transcript: true });
    expect(heard).toEqual([voice.byteLength, voice.byteLength]);
    const over = await prepare(91);
    if (over.status !== "fetched") throw new Error("expected fetched");
    expect(over.note).toContain("longer than the 1 min 30 s transcription limit");
    expect(heard).toHaveLength(2);
  });
});

describe("per-conversation quota", () => {
  test("files are counted per conversation; one that would pass the quota is refused unread", async () => {
    const used = new Map<string, number>();
    const media = createMediaInputs({
      blobs,
      open: (_context, ref, signal) => adapter.openFile(ref, signal),
      accepts: new Set(["image"]),
      limits: { ...DEFAULT_MEDIA_LIMITS, retryDelaysMs: [] },
      logger: recordingLogger(),
      conversationQuota: {
        limitBytes: 2048,
        used: async (c) => used.get(c) ?? 0,
        add: async (c, bytes) => {
          used.set(c, (used.get(c) ?? 0) + bytes);
        },
      },
    });
    const prepare = (conversationId: string, ref: string, sizeBytes: number) =>
      media.prepare({
        part: { type: "file", ref, kind: "file", name: "n.txt", sizeBytes },
        context: {},
        runId: "r",
        conversationId,
        signal: new AbortController().signal,
      });
    const a = served(new TextEncoder().encode("a".repeat(1500)));
    expect((await prepare("c1", a, 1500)).status).toBe("fetched");
    const b = served(new TextEncoder().encode("b".repeat(1000)));
    const refused = await prepare("c1", b, 1000);
    expect(refused).toMatchObject({ status: "refused" });
    if (refused.status === "fetched") throw new Error("expected refused");
    expect(refused.userNotice).toContain("reached its limit of 2 KB of files");
    expect(telegram.files.downloads(b).started).toBe(0);
    expect((await prepare("c2", b, 1000)).status).toBe("fetched");
    expect(used).toEqual(
      new Map([
        ["c1", 1500],
        ["c2", 1000],
      ]),
    );
  });
});

describe("type sniffing", () => {
  test("from the bytes only", async () => {
    expect(await sniffMediaType(await jpeg(4, 4))).toBe("image/jpeg");
    expect(await sniffMediaType(ELF)).toBe("application/x-elf");
    expect(await sniffMediaType(new TextEncoder().encode("héllo wörld\n"))).toBe("text/plain");
    expect(await sniffMediaType(new Uint8Array([0, 1, 2, 3, 255]))).toBe("application/octet-stream");
    expect(await sniffMediaType(new Uint8Array(0))).toBe("application/octet-stream");
    // A head cut inside a multi-byte character is still text.
    expect(await sniffMediaType(new TextEncoder().encode("aé").subarray(0, 2))).toBe("text/plain");
  });

  test("random and truncated bytes never throw", async () => {
    for (let i = 0; i < 300; i++) {
      const bytes = new Uint8Array(Math.floor(Math.random() * 64));
      crypto.getRandomValues(bytes);
      const type = await sniffMediaType(bytes);
      expect(typeof type).toBe("string");
    }
  });
});
