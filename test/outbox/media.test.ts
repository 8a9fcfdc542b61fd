import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FileLimits } from "../../channels/types.ts";
import { mediaRefusal, renderMediaCaption } from "../../outbox/media.ts";
import { formatRenderer } from "../../outbox/render.ts";
import type { OutboxMedia } from "../../outbox/types.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { silentLogger } from "../../src/util/log.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import { FakeAdapter, unavailable } from "./support/fake-adapter.ts";
import { OutboxDb } from "./support/outbox-db.ts";
import { messageInsert } from "./support/records.ts";

const MB = 1024 * 1024;

/**
 * Moves fake time on in small steps until `check` holds (it may read the store). Each step also
 * lets a few real milliseconds pass: a retry reads its blob from disk, and on a loaded machine a
 * minute of fake time would otherwise pass before that read returns.
 */
async function until(clock: FakeClock, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let step = 0; step < 600; step++) {
    if (await check()) return;
    await clock.advance(100);
    await Bun.sleep(2);
  }
  throw new Error(`still not true after a minute of fake time: ${check}`);
}
const TELEGRAM_LIKE: FileLimits = { maxFileBytes: 50 * MB, maxPhotoBytes: 10 * MB, maxCaptionChars: 1024 };

describe("mediaRefusal", () => {
  const file = (mimeType: string, sizeBytes: number) => ({ filename: "f.bin", mimeType, sizeBytes });

  test("photos and other files have their own limits; at the limit is allowed", () => {
    expect(mediaRefusal(file("image/png", 10 * MB), "telegram", TELEGRAM_LIKE)).toBeNull();
    expect(mediaRefusal(file("image/png", 10 * MB + 1), "telegram", TELEGRAM_LIKE)).toBe(
      "f.bin (image/png, 10.0 MB) is over telegram's 10 MB limit for photos a bot uploads; it was not sent.",
    );
    expect(mediaRefusal(file("application/pdf", 30 * MB), "telegram", TELEGRAM_LIKE)).toBeNull();
    expect(mediaRefusal(file("application/pdf", 51 * MB), "telegram", TELEGRAM_LIKE)).toMatch(
      /51 MB\) is over telegram's 50 MB limit for files/,
    );
    // A GIF is not shown as a photo, so only the file limit applies.
    expect(mediaRefusal(file("image/gif", 20 * MB), "telegram", TELEGRAM_LIKE)).toBeNull();
  });

  test("a channel without files refuses every file and says what to do", () => {
    expect(mediaRefusal(file("image/png", 1), "web", undefined)).toBe(
      "web cannot send files; f.bin was not sent. Send a link to it instead.",
    );
  });
});

describe("renderMediaCaption", () => {
  const limits = { maxMessageChars: 100, maxCaptionChars: 20 };

  test("a short caption goes with the file; no caption is one empty chunk", () => {
    expect(renderMediaCaption(formatRenderer, "the chart", "telegram-html", "plain", limits).chunks).toEqual([
      "the chart",
    ]);
    expect(renderMediaCaption(formatRenderer, "  ", "telegram-html", "plain", limits).chunks).toEqual([""]);
  });

  test("a caption over the limit follows the file as messages", () => {
    const long = "a caption that is longer than twenty characters";
    expect(renderMediaCaption(formatRenderer, long, "telegram-html", "plain", limits).chunks).toEqual([
      "",
      long,
    ]);
  });
});

describe("delivering files", () => {
  let db: OutboxDb;
  let blobDir: string;
  let blobs: DirectoryBlobStore;
  const running: DeliveryWorker[] = [];

  beforeEach(() => {
    db = new OutboxDb();
    blobDir = mkdtempSync(join(tmpdir(), "outbox-blobs-"));
    blobs = new DirectoryBlobStore(blobDir);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((worker) => worker.drain(0)));
    db.close();
    rmSync(blobDir, { recursive: true, force: true });
  });

  async function stored(bytes: Uint8Array, mimeType: string, filename: string): Promise<OutboxMedia> {
    const blob = await blobs.put(
      (async function* () {
        yield bytes;
      })(),
      { maxBytes: 100 * MB },
    );
    return { blobId: blob.id, filename, mimeType, sizeBytes: blob.sizeBytes };
  }

  function setup(options: { fileLimits?: FileLimits | null; idempotent?: boolean } = {}) {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({
      clock,
      ...(options.fileLimits === undefined ? {} : { fileLimits: options.fileLimits }),
      capabilities: { idempotentSend: options.idempotent ?? false },
    });
    const repo = db.repository();
    const worker = createDeliveryWorker({
      repo,
      adapters: new Map([["telegram", adapter]]),
      clock,
      random: () => 0,
      logger: silentLogger,
      blobs,
    });
    running.push(worker);
    return { clock, adapter, repo, worker };
  }

  const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

  test("text, a file with its caption, and text arrive in order; the upload carries the stored bytes", async () => {
    const { clock, adapter, repo, worker } = setup();
    const media = await stored(PNG, "image/png", "chart.png");
    await repo.insert(
      [
        messageInsert("chat", "here it comes", { key: "run_a:0a", runId: "run_a" }),
        messageInsert("chat", "the **chart**", { key: "run_a:file:1", runId: "run_a", media, replyTo: "7" }),
        messageInsert("chat", "done", { key: "run_a:0", runId: "run_a" }),
      ],
      clock.now(),
    );
    await worker.start();
    await until(clock, () => adapter.visible("chat").length === 3);
    expect(adapter.visible("chat")).toEqual(["here it comes", "[file chart.png] the <b>chart</b>", "done"]);
    const [upload] = adapter.callsOf("file");
    expect(upload?.file?.mimeType).toBe("image/png");
    expect([...upload!.file!.bytes]).toEqual([...PNG]);
    expect(upload?.replyTo).toBe("7");
    expect(upload?.idempotencyKey).toBe("run_a:file:1#0");
    const record = await repo.show("run_a:file:1");
    expect(record?.state).toBe("delivered");
    expect(record?.receipt?.messageIds).toHaveLength(1);
  });

  test("a file over the platform's limit fails with the reason and sends nothing; the chat continues", async () => {
    const { clock, adapter, repo, worker } = setup({
      fileLimits: { maxFileBytes: 8, maxCaptionChars: 1024 },
    });
    const media = await stored(PNG, "image/png", "big.png");
    await repo.insert(
      [
        messageInsert("chat", "", { key: "run_b:file:1", runId: "run_b", media }),
        messageInsert("chat", "after", { key: "run_b:0", runId: "run_b" }),
      ],
      clock.now(),
    );
    await worker.start();
    await until(clock, () => adapter.visible("chat").length === 1);
    expect(adapter.visible("chat")).toEqual(["after"]);
    expect(adapter.callsOf("file", "ok")).toEqual([]);
    const record = await repo.show("run_b:file:1");
    expect(record?.state).toBe("failed");
    expect(record?.lastError).toBe(
      "big.png (image/png, 11 bytes) is over telegram's 8 bytes limit for photos a bot uploads; it was not sent.",
    );
  });

  test("a channel without files fails the record with the reason", async () => {
    const { clock, repo, worker } = setup({ fileLimits: null });
    const media = await stored(PNG, "image/png", "chart.png");
    await repo.insert(
      [messageInsert("chat", "x", { key: "run_c:file:1", runId: "run_c", media })],
      clock.now(),
    );
    await worker.start();
    await until(clock, async () => (await repo.show("run_c:file:1"))?.state === "failed");
    expect((await repo.show("run_c:file:1"))?.lastError).toMatch(/telegram cannot send files; chart.png/);
  });

  test("a blob that is gone fails the record with the reason", async () => {
    const { clock, repo, worker } = setup();
    const media = await stored(PNG, "image/png", "chart.png");
    const gone = { ...media, blobId: "b".repeat(64) };
    await repo.insert(
      [messageInsert("chat2", "x", { key: "run_d:file:1", runId: "run_d", media: gone })],
      clock.now(),
    );
    await worker.start();
    await until(clock, async () => (await repo.show("run_d:file:1"))?.state === "failed");
    expect((await repo.show("run_d:file:1"))?.lastError).toMatch(/chart.png \(blob b+\) is no longer stored/);
  });

  test("a failed upload is retried like text and shows once", async () => {
    const { clock, adapter, repo, worker } = setup();
    adapter.fail("file", unavailable());
    const media = await stored(PNG, "image/png", "chart.png");
    await repo.insert(
      [messageInsert("chat", "cap", { key: "run_e:file:1", runId: "run_e", media })],
      clock.now(),
    );
    await worker.start();
    await until(clock, () => adapter.visible("chat").length === 1);
    await settle();
    expect(adapter.callsOf("file", "error")).toHaveLength(1);
    expect(adapter.visible("chat")).toEqual(["[file chart.png] cap"]);
    expect((await repo.show("run_e:file:1"))?.attempts).toBe(2);
  });

  test("a long caption follows the file as a message, and a crash after the upload does not upload again", async () => {
    const { clock, adapter, repo, worker } = setup({
      fileLimits: { maxFileBytes: MB, maxCaptionChars: 10 },
    });
    adapter.fail("send", unavailable());
    const media = await stored(PNG, "image/png", "chart.png");
    const caption = "a caption too long for ten characters";
    await repo.insert(
      [messageInsert("chat", caption, { key: "run_g:file:1", runId: "run_g", media })],
      clock.now(),
    );
    await worker.start();
    await until(clock, () => adapter.visible("chat").length === 2);
    expect(adapter.visible("chat")).toEqual(["[file chart.png]", caption]);
    expect(adapter.callsOf("file")).toHaveLength(1);
    expect((await repo.show("run_g:file:1"))?.state).toBe("delivered");
  });
});
