/**
 * Files the agent sends to the web chat, over the real HTTP server and web guard: the outbox's
 * sendFile puts the file in the session's transcript, and `/web/api/files/<id>` serves it to that
 * session only (by its header, as the stream does), with the sniffed type, a disposition, nosniff
 * and a sandboxing CSP.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import sharp from "sharp";
import type { OutgoingFile } from "../../channels/types.ts";
import {
  createWebChannel,
  type WebChannel,
  type WebTranscriptEntry,
  webUserIds,
} from "../../channels/web/index.ts";
import { mediaRefusal } from "../../outbox/media.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { webAccessPolicy } from "../../src/gateway/http/web-guard.ts";
import { sniffMediaType } from "../../src/media/sniff.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { tempDir } from "../support/runtime.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";
import { SseReader } from "./support/sse-reader.ts";

const SESSION = "sess_files_0123456789ab";
const OTHER_SESSION = "sess_files_zyxwvutsrqpo";
const USER_ID_KEY = "web-user-id-key-files-0123456789";
/** The reply target of a session: the user id derived from it. */
const userIdOf = webUserIds(USER_ID_KEY);
const MAX_FILE_BYTES = 1024 * 1024;

let dir: ReturnType<typeof tempDir>;
let blobs: DirectoryBlobStore;
let png: Uint8Array;
let server: HttpServer | undefined;
let web: WebChannel;

beforeAll(async () => {
  dir = tempDir("switchboard-web-files-");
  blobs = new DirectoryBlobStore(dir.path);
  png = new Uint8Array(
    await sharp({ create: { width: 8, height: 6, channels: 3, background: { r: 10, g: 200, b: 40 } } })
      .png()
      .toBuffer(),
  );
});
afterEach(async () => {
  await web?.stop();
  await server?.stop();
  server = undefined;
});
afterAll(() => dir.cleanup());

async function start(token: string | null = null): Promise<string> {
  web = createWebChannel({
    userIdKey: USER_ID_KEY,
    uploads: { blobs, maxFileBytes: MAX_FILE_BYTES, sniff: sniffMediaType },
  });
  await web.start(async () => ({ kind: "admitted", runId: "run_1", conversationId: "conv_1" }));
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web, routes: web.routes() }).services,
    logger: capturingLogger().logger,
    webAccess: webAccessPolicy({ listenHost: "127.0.0.1", publicUrl: null, token }),
  });
  return server.url;
}

/** Stores `bytes` as the outbox would have, and delivers them to `session` through sendFile. */
async function sendFile(
  session: string,
  bytes: Uint8Array,
  file: Partial<OutgoingFile> & { filename: string; mimeType: string },
): Promise<{ id: string; messageId: string }> {
  const stored = await blobs.put(
    (async function* () {
      yield bytes;
    })(),
    { maxBytes: MAX_FILE_BYTES },
  );
  const receipt = await web.files!.send(userIdOf(session), {
    bytes,
    caption: "",
    format: "rich",
    idempotencyKey: `rec_${stored.id.slice(0, 8)}:0#0`,
    ...file,
  });
  return { id: stored.id, messageId: receipt.messageIds[0]! };
}

const getFile = (url: string, id: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/web/api/files/${id}`, { headers });

test("a file the agent sent is in the transcript, and its session gets its bytes with safe headers", async () => {
  const url = await start();
  const stream = new SseReader(
    await fetch(`${url}/web/api/stream`, {
      headers: { accept: "text/event-stream", "x-switchboard-session": SESSION },
    }),
  );
  try {
    expect((await stream.nextJson<{ type: string }>()).type).toBe("snapshot");
    const { id, messageId } = await sendFile(SESSION, png, {
      filename: "chart.png",
      mimeType: "image/png",
      caption: "the **chart**",
    });
    expect(await stream.nextJson<Record<string, unknown>>()).toMatchObject({
      type: "message",
      messageId,
      role: "assistant",
      text: "the **chart**",
      files: [{ id, name: "chart.png", mimeType: "image/png", sizeBytes: png.byteLength, kind: "image" }],
    });
  } finally {
    await stream.cancel();
  }
  const { id } = await sendFile(SESSION, png, { filename: "chart.png", mimeType: "image/png" });
  const response = await getFile(url, id, { "x-switchboard-session": SESSION });
  expect(response.status).toBe(200);
  expect(new Uint8Array(await response.arrayBuffer())).toEqual(new Uint8Array(png));
  expect(response.headers.get("content-type")).toBe("image/png");
  expect(response.headers.get("content-disposition")).toBe("inline; filename=chart.png");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  expect(response.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
  expect(response.headers.get("cache-control")).toBe("private, no-store");
});

test("anything but a photo is a download, its name quoted safely, served with the type it was stored with", async () => {
  const url = await start();
  const html = new TextEncoder().encode("<script>alert(1)</script>");
  const { id } = await sendFile(SESSION, html, {
    filename: 'rapport "final"\nété.html',
    mimeType: "text/html",
  });
  const response = await getFile(url, id, { "x-switchboard-session": SESSION });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/html");
  // Quotes and control characters go; a non-ASCII name travels as RFC 6266's filename*.
  expect(response.headers.get("content-disposition")).toBe(
    `attachment; filename="rapport final?t?.html"; filename*=UTF-8''rapport%20final%C3%A9t%C3%A9.html`,
  );
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  expect(response.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
});

test("another session's file is 404, like a file that does not exist; no session header is 400", async () => {
  const url = await start();
  const { id } = await sendFile(SESSION, png, { filename: "mine.png", mimeType: "image/png" });
  const other = await getFile(url, id, { "x-switchboard-session": OTHER_SESSION });
  const missing = await getFile(url, "0".repeat(64), { "x-switchboard-session": SESSION });
  expect(other.status).toBe(404);
  expect(missing.status).toBe(404);
  expect(await other.json()).toEqual(await missing.json());
  expect((await getFile(url, id)).status).toBe(400);
  // The session id is never taken from the URL.
  expect((await fetch(`${url}/web/api/files/${id}?sessionId=${SESSION}`)).status).toBe(400);
  expect((await getFile(url, "not-a-blob-id", { "x-switchboard-session": SESSION })).status).toBe(404);
});

test("a file no longer stored (removed by retention) is 404 to its own session too", async () => {
  const url = await start();
  const bytes = new TextEncoder().encode("short-lived notes");
  const { id } = await sendFile(SESSION, bytes, { filename: "notes.txt", mimeType: "text/plain" });
  expect((await getFile(url, id, { "x-switchboard-session": SESSION })).status).toBe(200);
  await blobs.delete(id);
  expect((await getFile(url, id, { "x-switchboard-session": SESSION })).status).toBe(404);
});

test("with a web chat token the file needs it as well, like the stream", async () => {
  const url = await start("files-token-0123456789");
  const { id } = await sendFile(SESSION, png, { filename: "chart.png", mimeType: "image/png" });
  expect((await getFile(url, id, { "x-switchboard-session": SESSION })).status).toBe(401);
  const authorised = await getFile(url, id, {
    "x-switchboard-session": SESSION,
    authorization: "Bearer files-token-0123456789",
  });
  expect(authorised.status).toBe(200);
});

test("a photo the user uploads shows in their message with the type its bytes have, to their session only", async () => {
  const url = await start();
  const session = { "x-switchboard-session": SESSION };
  // A PNG named as a JPEG: the type shown is the one sniffed, never the name's or the browser's.
  const uploaded = await fetch(`${url}/web/api/uploads`, {
    method: "POST",
    headers: { ...session, "content-type": "application/octet-stream" },
    body: png as Uint8Array<ArrayBuffer>,
  });
  expect(uploaded.status).toBe(201);
  const { uploadId } = (await uploaded.json()) as { uploadId: string };
  const posted = await fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { ...session, "content-type": "application/json" },
    body: JSON.stringify({
      sessionId: SESSION,
      clientMessageId: "upload_msg_1",
      text: "my garden",
      files: [{ uploadId, name: "garden.jpg" }],
    }),
  });
  expect(posted.status).toBe(202);
  const shown = (await snapshot(SESSION)).find((m) => m.messageId === "upload_msg_1");
  expect(shown).toMatchObject({
    role: "user",
    text: "my garden",
    files: [
      { id: uploadId, name: "garden.jpg", mimeType: "image/png", sizeBytes: png.byteLength, kind: "image" },
    ],
  });
  const mine = await getFile(url, uploadId, session);
  expect(mine.status).toBe(200);
  expect(mine.headers.get("content-type")).toBe("image/png");
  expect(new Uint8Array(await mine.arrayBuffer())).toEqual(new Uint8Array(png));
  // Another session, even knowing the id, is told the same as for no file at all.
  const theirs = await getFile(url, uploadId, { "x-switchboard-session": OTHER_SESSION });
  expect(theirs.status).toBe(404);
});

test("a resend with the same idempotency key shows the file once", async () => {
  await start();
  const first = await sendFile(SESSION, png, { filename: "once.png", mimeType: "image/png" });
  const again = await sendFile(SESSION, png, { filename: "once.png", mimeType: "image/png" });
  expect(again.messageId).toBe(first.messageId);
  const shown = await snapshot(SESSION);
  expect(shown.filter((m) => m.files?.[0]?.name === "once.png")).toHaveLength(1);
});

test("the channel takes files up to the gateway's limit; without a blob store it takes none", () => {
  const withStore = createWebChannel({ uploads: { blobs, maxFileBytes: MAX_FILE_BYTES } });
  expect(withStore.files?.limits).toEqual({
    maxFileBytes: MAX_FILE_BYTES,
    maxCaptionChars: 8000,
    servedByGateway: true,
  });
  const file = { filename: "chart.png", mimeType: "image/png", sizeBytes: 1000 };
  expect(mediaRefusal(file, "web", withStore.files?.limits)).toBeNull();
  expect(mediaRefusal({ ...file, sizeBytes: MAX_FILE_BYTES + 1 }, "web", withStore.files?.limits)).toContain(
    "over web's 1 MB limit",
  );
  const without = createWebChannel({});
  expect(without.files).toBeUndefined();
});

test("the chat page allows blob: images (how it shows files) and keeps the rest of its CSP", async () => {
  const url = await start();
  const csp = (await fetch(`${url}/`)).headers.get("content-security-policy") ?? "";
  expect(csp).toContain("img-src 'self' data: blob:;");
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self';");
});

async function snapshot(session: string): Promise<WebTranscriptEntry[]> {
  const stream = new SseReader(
    await fetch(`${server!.url}/web/api/stream`, {
      headers: { accept: "text/event-stream", "x-switchboard-session": session },
    }),
  );
  try {
    const first = await stream.nextJson<{ type: string; messages: WebTranscriptEntry[] }>();
    if (first.type !== "snapshot") throw new Error(`expected a snapshot first, got ${first.type}`);
    return first.messages;
  } finally {
    await stream.cancel();
  }
}
