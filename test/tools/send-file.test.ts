/** send_file and tool images against a real SQLite store, a blob directory and local HTTP pages. */

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asSchema } from "ai";
import type { OutboxMessageRecord } from "../../outbox/types.ts";
import type { AdmitRequest } from "../../src/runtime/store.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { createFileTools, SEND_FILE, type SendFileToolOptions } from "../../src/tools/files/send-file.ts";
import { deliverToolImages } from "../../src/tools/files/tool-images.ts";
import { admitRequest } from "../store/conformance.ts";

const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1,
  8, 6, 0, 0, 0,
]);
const PDF = new TextEncoder().encode("%PDF-1.7\n1 0 obj << >> endobj\n");
const T0 = 1_700_000_000_000;

let server: ReturnType<typeof Bun.serve>;
let base: string;
beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      if (url.pathname === "/files/report.pdf") return new Response(PDF);
      if (url.pathname === "/named")
        return new Response(PNG, {
          headers: {
            "content-disposition": 'attachment; filename="chart.png"',
            "content-type": "text/plain",
          },
        });
      if (url.pathname === "/to-report") return Response.redirect(`${base}/files/report.pdf`, 302);
      if (url.pathname === "/big") return new Response(new Uint8Array(4096));
      if (url.pathname === "/stream")
        return new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new Uint8Array(1024));
            },
          }),
        );
      return new Response("missing", { status: 404 });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));

let dir: string;
let stores: SqliteStores;
let blobs: DirectoryBlobStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "send-file-"));
  stores = openSqliteStores(join(dir, "switchboard.db"));
  blobs = new DirectoryBlobStore(join(dir, "blobs"));
});
afterEach(() => {
  stores.close();
  rmSync(dir, { recursive: true, force: true });
});

async function ownedRun(conversationId = "c1", parts?: AdmitRequest["parts"]) {
  const admitted = await stores.runtime.admit(admitRequest(conversationId, "hello", parts ? { parts } : {}));
  const acquired = await stores.runtime.acquireRun({
    runId: admitted.runId,
    owner: "w",
    nowMs: T0,
    leaseMs: 60_000,
  });
  return { runId: admitted.runId, fence: acquired!.fence, conversationId };
}

function options(
  run: Awaited<ReturnType<typeof ownedRun>>,
  overrides: Partial<SendFileToolOptions> = {},
): SendFileToolOptions {
  return {
    runId: run.runId,
    destination: { channel: "telegram", account: "bot-1", target: "1001", replyTo: "7" },
    blobs,
    maxFileBytes: 2048,
    fetch: { allowPrivate: true, timeoutMs: 5_000, maxRedirects: 5 },
    listMessages: (page) => stores.runtime.listMessages(run.conversationId, page),
    refusal: () => null,
    enqueue: (files) => stores.runtime.enqueueFiles(run.fence, files, T0),
    ...overrides,
  };
}

async function call(opts: SendFileToolOptions, input: Record<string, unknown>, toolCallId = "call-1") {
  const tool = createFileTools(opts)[SEND_FILE]!;
  return await tool.execute!(input as never, { toolCallId, messages: [] } as never);
}

async function records(conversationId = "c1"): Promise<OutboxMessageRecord[]> {
  return (await stores.outbox.list({ conversationId })).filter(
    (r): r is OutboxMessageRecord => r.kind === "message",
  );
}

describe("send_file", () => {
  test("a URL is downloaded (redirects followed), sniffed, stored and enqueued once per call", async () => {
    const run = await ownedRun();
    const result = await call(options(run), { url: `${base}/to-report`, caption: "the **report**" });
    expect(result).toMatchObject({
      sent: { filename: "report.pdf", mimeType: "application/pdf", sizeBytes: PDF.length },
    });
    const [record] = await records();
    expect(record).toMatchObject({
      key: `${run.runId}:file:call-1`,
      target: "1001",
      replyTo: "7",
      markdown: "the **report**",
      state: "pending",
      media: { filename: "report.pdf", mimeType: "application/pdf", sizeBytes: PDF.length },
    });
    expect(await blobs.read(record!.media!.blobId)).toEqual(PDF);
    // The same call run again after a crash enqueues nothing more.
    await call(options(run), { url: `${base}/to-report`, caption: "the **report**" });
    expect(await records()).toHaveLength(1);
  });

  test("the type comes from the bytes, the name from Content-Disposition", async () => {
    const run = await ownedRun();
    const result = await call(options(run), { url: `${base}/named` });
    expect(result).toMatchObject({ sent: { filename: "chart.png", mimeType: "image/png" } });
  });

  test("private addresses are refused unless allowed, like web_fetch; URLs can be switched off", async () => {
    const run = await ownedRun();
    const guarded = options(run, { fetch: { allowPrivate: false, timeoutMs: 5_000, maxRedirects: 5 } });
    await expect(call(guarded, { url: `${base}/files/report.pdf` })).rejects.toThrow(
      /127\.0\.0\.1, a private, loopback or link-local address: refused/,
    );
    await expect(call(options(run, { fetch: null }), { url: `${base}/files/report.pdf` })).rejects.toThrow(
      /SWITCHBOARD_WEB_FETCH=off/,
    );
    await expect(call(options(run), { url: `${base}/nothing` })).rejects.toThrow(/answered HTTP 404/);
    expect(await records()).toEqual([]);
  });

  test("a file over SWITCHBOARD_MAX_FILE_MB is refused, stated or streamed, and nothing is kept", async () => {
    const run = await ownedRun();
    await expect(call(options(run), { url: `${base}/big` })).rejects.toThrow(
      /larger than the 2048 bytes limit for files \(SWITCHBOARD_MAX_FILE_MB\)/,
    );
    await expect(call(options(run), { url: `${base}/stream` })).rejects.toThrow(/SWITCHBOARD_MAX_FILE_MB/);
    expect(await records()).toEqual([]);
  });

  test("a file of the conversation is sent by its name; another conversation's is not found", async () => {
    const stored = await blobs.put(
      (async function* () {
        yield PNG;
      })(),
      { maxBytes: 4096 },
    );
    const attachment = {
      type: "file" as const,
      ref: "tg-file-1",
      kind: "photo" as const,
      name: "holiday.png",
      prepared: {
        status: "fetched" as const,
        blobId: stored.id,
        mediaType: "image/png",
        sizeBytes: PNG.length,
      },
    };
    const run = await ownedRun("c1", [{ type: "text", text: "keep this" }, attachment]);
    const result = await call(options(run), { file: "holiday.png", filename: "../../etc/beach.png" });
    expect(result).toMatchObject({
      sent: { blobId: stored.id, filename: "beach.png", mimeType: "image/png" },
    });
    const other = await ownedRun("c2");
    await expect(call(options(other), { file: "holiday.png" })).rejects.toThrow(
      /no file named "holiday.png".*It has no files; give a `url` instead/,
    );
    await expect(call(options(run), { file: "nope.png" })).rejects.toThrow(/Files it has: holiday.png/);
    await expect(call(options(run), { file: "holiday.png", url: `${base}/named` })).rejects.toThrow(
      /either `file`.*or `url`/,
    );
  });

  test("a file the channel refuses is reported to the model and not enqueued; a lost fence enqueues nothing", async () => {
    const run = await ownedRun();
    const refusing = options(run, { refusal: (file) => `${file.filename} is too big for telegram` });
    await expect(call(refusing, { url: `${base}/named` })).rejects.toThrow(
      /chart.png is too big for telegram/,
    );
    await stores.runtime.acquireRun({
      runId: run.runId,
      owner: "other",
      nowMs: T0 + 120_000,
      leaseMs: 60_000,
    });
    await expect(call(options(run), { url: `${base}/named` })).rejects.toMatchObject({ code: "fence_lost" });
    expect(await records()).toEqual([]);
  });
});

describe("tool images", () => {
  test("images become photo records in order; bytes that are not a photo are not sent", async () => {
    const run = await ownedRun();
    const notes = await deliverToolImages(
      options(run),
      [{ data: Buffer.from(PNG).toString("base64") }, { data: Buffer.from(PDF).toString("base64") }],
      "call-9",
      "plot",
    );
    expect(notes).toEqual([
      "[image plot-1.png sent to the chat as a photo]",
      "[image not sent: its bytes are application/pdf, not a JPEG, PNG or WebP photo]",
    ]);
    const [record] = await records();
    expect(record).toMatchObject({
      key: `${run.runId}:file:call-9:1`,
      markdown: "",
      media: { filename: "plot-1.png", mimeType: "image/png" },
    });
  });
});

test("send_file's description and schema are Latin-1, so a request with a photo stays an 8-bit string", async () => {
  const tool = createFileTools(options(await ownedRun()))[SEND_FILE]!;
  const text = JSON.stringify({
    description: tool.description,
    schema: asSchema(tool.inputSchema).jsonSchema,
  });
  expect(text).toContain("[image ...]");
  expect(Math.max(...[...text].map((c) => c.codePointAt(0) ?? 0))).toBeLessThanOrEqual(0xff);
});
