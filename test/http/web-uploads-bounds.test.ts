/**
 * Uploads in the web chat over the real HTTP server and web guard: uploads not yet sent with a
 * message are bounded per session, per client address and in all (429 naming the bound, with
 * Retry-After; a message that carries them frees the room; an hour later they stop counting); a
 * file over the limit is a JSON 413 naming the limit in MB, also past the server's own body
 * limit; and a file's name reaches the download's Content-Disposition without folders or `../`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { webFileHeaders } from "../../channels/web/files.ts";
import { createWebChannel, type WebChannel } from "../../channels/web/index.ts";
import { defaultPendingLimits, type PendingUploadLimits } from "../../channels/web/pending-uploads.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { tempDir } from "../support/runtime.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";

const KB = 1024;
const MAX_FILE_BYTES = 64 * KB;
let dir: ReturnType<typeof tempDir>;
let blobs: DirectoryBlobStore;
let server: HttpServer | undefined;
let web: WebChannel | undefined;
const clock = new FakeClock(Date.parse("2026-05-01T10:00:00Z"), { instantSleeps: true });

beforeAll(() => {
  dir = tempDir("switchboard-web-upload-bounds-");
  blobs = new DirectoryBlobStore(dir.path);
});
afterEach(async () => {
  await web?.stop();
  await server?.stop();
  server = undefined;
});
afterAll(() => dir.cleanup());

async function start(pending?: PendingUploadLimits, maxRequestBodyBytes?: number): Promise<string> {
  web = createWebChannel({
    clock,
    // Uploads are not what is limited here.
    messagesPerSessionPerMinute: 1000,
    uploads: { blobs, maxFileBytes: MAX_FILE_BYTES, ...(pending ? { pending } : {}) },
  });
  await web.start(async () => ({ kind: "admitted", runId: "run_1", conversationId: "conv_1" }));
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web }).services,
    logger: capturingLogger().logger,
    webRequestsPerIpPerMinute: 1000,
    ...(maxRequestBodyBytes === undefined ? {} : { maxRequestBodyBytes }),
  });
  return server.url;
}

let distinct = 0;
/** Uploads `bytes` distinct bytes (never the same blob twice) as `session`. */
async function upload(url: string, session: string, bytes = 1 * KB): Promise<Response> {
  const body = new Uint8Array(bytes);
  new DataView(body.buffer).setUint32(0, ++distinct);
  return fetch(`${url}/web/api/uploads`, {
    method: "POST",
    headers: { "x-switchboard-session": session, "content-type": "application/octet-stream" },
    body,
  });
}

async function send(url: string, session: string, uploadIds: string[], name = "notes.txt") {
  return fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "x-switchboard-session": session, "content-type": "application/json" },
    body: JSON.stringify({
      sessionId: session,
      clientMessageId: `message_${++distinct}`,
      files: uploadIds.map((uploadId) => ({ uploadId, name })),
    }),
  });
}

const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error;
const session = (n: number) => `bounds-session-${n}-0123456789`;
const limits = (over: Partial<PendingUploadLimits>): PendingUploadLimits => ({
  ...defaultPendingLimits(MAX_FILE_BYTES),
  ...over,
});

describe("uploads not yet sent are bounded", () => {
  test("per session: the bound is named, with Retry-After; sending them frees the room", async () => {
    const url = await start(limits({ perSession: { files: 3, bytes: 1024 * KB } }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await upload(url, session(1));
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { uploadId: string }).uploadId);
    }
    const refused = await upload(url, session(1));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("3600");
    expect(await errorOf(refused)).toEqual({
      code: "too_many_pending_uploads",
      message:
        "This chat holds 3 files (3 KB) uploaded but not sent; the limit is 3 files or 1 MB per session. Send them with a message, or try again in 60 min.",
    });
    // Another session is not held back by this one's.
    expect((await upload(url, session(2))).status).toBe(201);
    // A message that carries them: they are no longer pending.
    expect((await send(url, session(1), ids)).status).toBe(202);
    expect((await upload(url, session(1))).status).toBe(201);
  });

  test("per session in bytes, and an hour later what was never sent stops counting", async () => {
    const url = await start(limits({ perSession: { files: 100, bytes: 2 * MAX_FILE_BYTES } }));
    expect((await upload(url, session(3), MAX_FILE_BYTES)).status).toBe(201);
    expect((await upload(url, session(3), MAX_FILE_BYTES)).status).toBe(201);
    const refused = await upload(url, session(3), 1 * KB);
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).message).toContain("the limit is 100 files or 0.1 MB per session");
    await clock.advance(60 * 60 * 1000);
    expect((await upload(url, session(3), 1 * KB)).status).toBe(201);
  });

  test("per client address: new session ids from one address share it", async () => {
    const url = await start(limits({ perClient: { files: 4, bytes: 1024 * KB } }));
    for (let i = 0; i < 4; i++) expect((await upload(url, session(10 + i))).status).toBe(201);
    const refused = await upload(url, session(99));
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).message).toStartWith(
      "This address holds 4 files (4 KB) uploaded but not sent; the limit is 4 files or 1 MB per address.",
    );
  });

  test("in all", async () => {
    const url = await start(limits({ total: { files: 2, bytes: 1024 * KB } }));
    expect((await upload(url, session(20))).status).toBe(201);
    expect((await upload(url, session(21))).status).toBe(201);
    const refused = await upload(url, session(22));
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).message).toStartWith(
      "The gateway holds 2 files (2 KB) uploaded but not sent; the limit is 2 files or 1 MB in all.",
    );
  });

  test("the defaults: 20 files a session", async () => {
    const url = await start();
    for (let i = 0; i < 20; i++) expect((await upload(url, session(30))).status).toBe(201);
    const refused = await upload(url, session(30));
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).message).toContain("the limit is 20 files or 100 MB per session");
  });
});

describe("a file over the limit", () => {
  test("is a JSON 413 naming the limit in MB, within the server's body limit and past it", async () => {
    const url = await start(undefined, 2 * MAX_FILE_BYTES);
    for (const bytes of [MAX_FILE_BYTES + 1, 8 * MAX_FILE_BYTES]) {
      const response = await upload(url, session(40), bytes);
      expect(response.status).toBe(413);
      expect(await errorOf(response)).toEqual({
        code: "payload_too_large",
        message: "The file is larger than the 0.1 MB limit per file (SWITCHBOARD_MAX_FILE_MB).",
      });
    }
    // A refused file holds no room.
    expect((await upload(url, session(40))).status).toBe(201);
  });
});

describe("download names", () => {
  const disposition = (name: string, kind: "image" | "file" = "file") =>
    webFileHeaders({ id: "x", name, mimeType: "text/plain", sizeBytes: 1, kind })["content-disposition"];

  test("only the last segment, without control characters or quotes; RFC 6266 filename* for non-ASCII", () => {
    expect(disposition("../../../etc/passwd")).toBe("attachment; filename=passwd");
    expect(disposition("..\\..\\Windows\\win.ini")).toBe("attachment; filename=win.ini");
    expect(disposition("..")).toBe("attachment; filename=file");
    expect(disposition("notes/\u0007\u202e../.bashrc")).toBe("attachment; filename=bashrc");
    expect(disposition('say "hi"\r\n.txt', "image")).toBe('inline; filename="say hi.txt"');
    expect(disposition("../日記.txt")).toBe(
      `attachment; filename="??.txt"; filename*=UTF-8''%E6%97%A5%E8%A8%98.txt`,
    );
  });

  test("an upload named with ../ in its message downloads under its last segment", async () => {
    const url = await start();
    const uploaded = await upload(url, session(50));
    const { uploadId } = (await uploaded.json()) as { uploadId: string };
    expect((await send(url, session(50), [uploadId], "../../../etc/passwd")).status).toBe(202);
    const response = await fetch(`${url}/web/api/files/${uploadId}`, {
      headers: { "x-switchboard-session": session(50) },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-disposition")).toBe("attachment; filename=passwd");
  });
});
