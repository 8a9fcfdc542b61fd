/**
 * Files in the web chat, in a real browser (Chromium through playwright-core) against the real
 * HTTP server and web guard: attach with the button, paste, or drop; each file is uploaded at
 * once into a real blob store and the message carries it by reference, which the run opens
 * byte for byte. Over the limit, the page shows the refusal. The upload route keeps the guard's
 * promises: octet-stream only, no foreign origin, and a message may name only its own session's
 * uploads. A document the agent sends shows as a link that downloads it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import type { InboundMessage } from "../../channels/types.ts";
import { createWebChannel, type WebChannel, webUserIds } from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { sniffMediaType } from "../../src/media/sniff.ts";
import type { OperatorService } from "../../src/operator/service.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { tempDir } from "../support/runtime.ts";
import { launchChromium } from "./support/browser.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const MAX_FILE_BYTES = 256 * 1024;
/** The page's session id reaches the channel only as the user id derived under this key. */
const USER_ID_KEY = "web-user-id-key-uploads-0123456789";
const userIdOf = webUserIds(USER_ID_KEY);
let dir: ReturnType<typeof tempDir>;
let web: WebChannel;
let blobs: DirectoryBlobStore;
let server: HttpServer;
let browser: Browser;
const inbound: InboundMessage[] = [];

beforeAll(async () => {
  dir = tempDir("switchboard-uploads-");
  blobs = new DirectoryBlobStore(dir.path);
  web = createWebChannel({
    userIdKey: USER_ID_KEY,
    uploads: { blobs, maxFileBytes: MAX_FILE_BYTES, sniff: sniffMediaType },
  });
  await web.start(async (message) => {
    inbound.push(message);
    await web.send(message.replyTarget, {
      text: `got ${message.attachments.length} file(s)`,
      format: "rich",
      idempotencyKey: `reply:${message.updateKey}`,
    });
    return { kind: "admitted", runId: `run_${inbound.length}`, conversationId: "conv_web" };
  });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    // Operator routes are not exercised here.
    services: testServices({ operator: {} as OperatorService, web }).services,
    logger: capturingLogger().logger,
    maxRequestBodyBytes: MAX_FILE_BYTES * 4,
  });
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  await server?.stop();
  dir?.cleanup();
});

async function chatPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.setDefaultTimeout(8000);
  await page.goto(`${server.url}/`);
  await page.locator('#connection[data-state="online"]').waitFor();
  return page;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The last message received, its one attachment opened as the run would, byte for byte. */
async function lastAttachment(): Promise<{ message: InboundMessage; bytes: Uint8Array }> {
  const message = inbound.at(-1)!;
  const [attachment] = message.attachments;
  const remote = await web.openFile(attachment!.ref, new AbortController().signal);
  const chunks: Uint8Array[] = [];
  for await (const chunk of remote.body) chunks.push(chunk);
  return { message, bytes: new Uint8Array(Buffer.concat(chunks)) };
}

/** Dispatches a paste (on the input) or a drop (on the transcript) carrying one file. */
async function transfer(page: Page, kind: "paste" | "drop", name: string, text: string): Promise<void> {
  await page.evaluate(
    ({ kind, name, text }) => {
      const data = new DataTransfer();
      data.items.add(new File([text], name, { type: "text/plain" }));
      const target = document.getElementById(kind === "paste" ? "input" : "transcript")!;
      const event =
        kind === "paste"
          ? new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true })
          : new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true });
      target.dispatchEvent(event);
    },
    { kind, name, text },
  );
}

describe("web chat files (Chromium)", () => {
  test("the attach button uploads the file; the message carries it and its bytes arrive whole", async () => {
    const page = await chatPage();
    try {
      const bytes = new Uint8Array(40_000).map((_, i) => (i * 7) % 251);
      await page.setInputFiles("#file", {
        name: "data.bin",
        mimeType: "application/octet-stream",
        buffer: Buffer.from(bytes),
      });
      await page.locator('.attachment[data-state="ready"]', { hasText: "data.bin" }).waitFor();
      await page.fill("#input", "here is my data");
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant", { hasText: "got 1 file(s)" }).waitFor();
      const { message, bytes: received } = await lastAttachment();
      expect(message.text).toBe("here is my data");
      expect(message.attachments).toEqual([
        {
          kind: "file",
          ref: `upload:${sha256(bytes)}`,
          name: "data.bin",
          sizeBytes: bytes.byteLength,
          mediaType: "application/octet-stream",
        },
      ]);
      expect(received).toEqual(bytes);
      // Once recorded, the user's message shows the file as a download link, as the agent's do.
      await page.locator(".bubble.user .file-link", { hasText: "data.bin" }).waitFor();
      expect(await page.locator(".attachment").count()).toBe(0);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a photo the user sends shows in their message, loaded from the gateway, whatever the browser called it", async () => {
    const page = await chatPage();
    try {
      const photo = await sharp({
        create: { width: 40, height: 30, channels: 3, background: { r: 200, g: 30, b: 90 } },
      })
        .png()
        .toBuffer();
      await page.setInputFiles("#file", { name: "holiday.jpg", mimeType: "image/jpeg", buffer: photo });
      await page.locator('.attachment[data-state="ready"]', { hasText: "holiday.jpg" }).waitFor();
      await page.fill("#input", "from my trip");
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant", { hasText: "got 1 file(s)" }).waitFor();
      expect((await lastAttachment()).message.attachments[0]?.mediaType).toBe("image/png");
      const image = page.locator('.bubble.user img.bubble-image[alt="holiday.jpg"]');
      await image.waitFor();
      await page.waitForFunction(
        () =>
          (document.querySelector(".bubble.user img.bubble-image") as HTMLImageElement | null)
            ?.naturalWidth === 40,
      );
      expect(await page.locator(".bubble.user", { hasText: "from my trip" }).count()).toBe(1);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a pasted file and a dropped file are uploaded and sent, with no text needed", async () => {
    const page = await chatPage();
    try {
      await transfer(page, "paste", "pasted.txt", "pasted words");
      await page.locator('.attachment[data-state="ready"]', { hasText: "pasted.txt" }).waitFor();
      await page.click("#send");
      await page.locator(".bubble.assistant", { hasText: "got 1 file(s)" }).waitFor();
      const pasted = await lastAttachment();
      expect(pasted.message.text).toBe("");
      expect(new TextDecoder().decode(pasted.bytes)).toBe("pasted words");

      const before = inbound.length;
      await transfer(page, "drop", "dropped.txt", "dropped words");
      await page.locator('.attachment[data-state="ready"]', { hasText: "dropped.txt" }).waitFor();
      await page.click("#send");
      await page.waitForFunction((n) => document.querySelectorAll(".bubble.assistant").length >= n, 2);
      expect(inbound.length).toBe(before + 1);
      const dropped = await lastAttachment();
      expect(dropped.message.attachments[0]?.name).toBe("dropped.txt");
      expect(new TextDecoder().decode(dropped.bytes)).toBe("dropped words");
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a file over the limit is refused on the page, and nothing is sent", async () => {
    const page = await chatPage();
    try {
      const before = inbound.length;
      await page.setInputFiles("#file", {
        name: "big.bin",
        mimeType: "application/octet-stream",
        buffer: Buffer.alloc(MAX_FILE_BYTES + 1, 1),
      });
      const failed = page.locator('.attachment[data-state="failed"]', { hasText: "big.bin" });
      await failed.waitFor();
      expect(await failed.textContent()).toContain("larger than the 0.3 MB limit per file");
      await page.click("#send");
      await Bun.sleep(300);
      expect(inbound.length).toBe(before);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a file past the server's body limit (refused before the upload route runs) names the limit too", async () => {
    const page = await chatPage();
    try {
      await page.setInputFiles("#file", {
        name: "huge.bin",
        mimeType: "application/octet-stream",
        // Past maxRequestBodyBytes (4 × the file limit): the server refuses it before any route.
        buffer: Buffer.alloc(MAX_FILE_BYTES * 6, 1),
      });
      const failed = page.locator('.attachment[data-state="failed"]', { hasText: "huge.bin" });
      await failed.waitFor();
      const shown = (await failed.textContent()) ?? "";
      expect(shown).toContain("0.3 MB");
      expect(shown).not.toContain("answered 413");
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("files the agent sends (Chromium)", () => {
  test("a document shows as a download link; a click saves its bytes under its name", async () => {
    const page = await chatPage();
    try {
      const sessionId = await page.evaluate(() => localStorage.getItem("switchboard.sessionId")!);
      const bytes = new TextEncoder().encode("quarter,revenue\nQ1,10\n");
      await blobs.put(
        (async function* () {
          yield bytes;
        })(),
        { maxBytes: MAX_FILE_BYTES },
      );
      await web.files!.send(userIdOf(sessionId), {
        bytes,
        filename: "figures.csv",
        mimeType: "text/csv",
        caption: "the figures",
        format: "rich",
        idempotencyKey: "rec_csv:0#0",
      });
      const link = page.locator(".bubble.assistant a.file-link", { hasText: "figures.csv" });
      await link.waitFor();
      expect(await link.textContent()).toBe("📄 figures.csv (22 bytes)");
      expect(await page.locator(".bubble.assistant img").count()).toBe(0);
      const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
      expect(download.suggestedFilename()).toBe("figures.csv");
      expect(new Uint8Array(await Bun.file((await download.path())!).arrayBuffer())).toEqual(bytes);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a file no longer stored says so in its place, and is not fetched again on every render", async () => {
    const page = await chatPage();
    try {
      const sessionId = await page.evaluate(() => localStorage.getItem("switchboard.sessionId")!);
      const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
      const stored = await blobs.put(
        (async function* () {
          yield bytes;
        })(),
        { maxBytes: MAX_FILE_BYTES },
      );
      await blobs.delete(stored.id);
      let fetches = 0;
      page.on("request", (request) => {
        if (request.url().includes("/web/api/files/")) fetches += 1;
      });
      await web.files!.send(userIdOf(sessionId), {
        bytes,
        filename: "gone.png",
        mimeType: "image/png",
        caption: "",
        format: "rich",
        idempotencyKey: "rec_gone:0#0",
      });
      await page
        .locator(".bubble.assistant .bubble-error", {
          hasText: "gone.png could not be shown: it is no longer stored.",
        })
        .waitFor();
      await web.send(userIdOf(sessionId), { text: "more", format: "rich", idempotencyKey: "rec_more:0#0" });
      await page.locator(".bubble.assistant", { hasText: "more" }).waitFor();
      expect(fetches).toBe(1);
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("the upload route keeps the web guard's promises", () => {
  const session = "uploadsession0123456789";
  const upload = (headers: Record<string, string>, body: BodyInit = "abc") =>
    fetch(`${server.url}/web/api/uploads`, {
      method: "POST",
      headers: { "x-switchboard-session": session, ...headers },
      body,
    });

  test("only octet-stream; a form or text/plain type is refused before the body is read", async () => {
    for (const type of [
      "text/plain",
      "multipart/form-data; boundary=x",
      "application/x-www-form-urlencoded",
    ]) {
      const response = await upload({ "content-type": type });
      expect(response.status).toBe(415);
    }
    // And octet-stream is refused on every other chat route.
    const message = await fetch(`${server.url}/web/api/messages`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: "{}",
    });
    expect(message.status).toBe(415);
  });

  test("a foreign origin is refused", async () => {
    const response = await upload({
      "content-type": "application/octet-stream",
      origin: "https://evil.example",
    });
    expect(response.status).toBe(403);
  });

  test("a message may name only uploads its own session made", async () => {
    const response = await upload({ "content-type": "application/octet-stream" }, "mine only");
    expect(response.status).toBe(201);
    const { uploadId } = (await response.json()) as { uploadId: string };
    const send = (sessionId: string) =>
      fetch(`${server.url}/web/api/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          sessionId,
          clientMessageId: `m-${sessionId.slice(0, 10)}`,
          files: [{ uploadId, name: "x.txt" }],
        }),
      });
    const other = await send("anothersession0123456789");
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: { message: string } }).error.message).toContain(
      '"x.txt" was not uploaded by this session',
    );
    expect((await send(session)).status).toBe(202);
    const opened = await web.openFile(inbound.at(-1)!.attachments[0]!.ref, new AbortController().signal);
    const chunks: Uint8Array[] = [];
    for await (const chunk of opened.body) chunks.push(chunk);
    expect(new TextDecoder().decode(Buffer.concat(chunks))).toBe("mine only");
  });

  test("a body over the limit without a stated length is cut off with 413", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array(MAX_FILE_BYTES / 2));
        controller.close();
      },
    });
    const response = await upload({ "content-type": "application/octet-stream" }, stream);
    expect(response.status).toBe(413);
  });
});
