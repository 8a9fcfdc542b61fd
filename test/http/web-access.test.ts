/**
 * Who may use the web chat, over the real HTTP server: cross-site requests, DNS-rebinding host
 * names, the web chat token, rate limits per session and per address, the session id kept out of
 * URLs, and over-limit bodies. (The same vectors from a real page in Chromium: cross-site.test.ts.)
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { InboundMessage } from "../../channels/types.ts";
import { createWebChannel, type WebChannel } from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { webAccessPolicy } from "../../src/gateway/http/web-guard.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";

const SESSION = "sess_0123456789abcdefXY";
const OTHER_SESSION = "sess_zyxwvutsrqponmlkJI";
const WEB_TOKEN = "web-token-5f0c2a9e71d3";

let server: HttpServer | undefined;
let web: WebChannel;

afterEach(async () => {
  await web?.stop();
  await server?.stop();
  server = undefined;
});

interface StartOptions {
  token?: string | null;
  publicUrl?: string | null;
  messagesPerSessionPerMinute?: number;
  webRequestsPerIpPerMinute?: number;
}

async function start(options: StartOptions = {}) {
  const received: InboundMessage[] = [];
  const log = capturingLogger();
  web = createWebChannel(
    options.messagesPerSessionPerMinute
      ? { messagesPerSessionPerMinute: options.messagesPerSessionPerMinute }
      : {},
  );
  await web.start(async (message) => {
    received.push(message);
    return { kind: "admitted", runId: `run_${received.length}`, conversationId: "conv_1" };
  });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web }).services,
    logger: log.logger,
    webAccess: webAccessPolicy({
      listenHost: "127.0.0.1",
      publicUrl: options.publicUrl ?? null,
      token: options.token ?? null,
    }),
    ...(options.webRequestsPerIpPerMinute
      ? { webRequestsPerIpPerMinute: options.webRequestsPerIpPerMinute }
      : {}),
  });
  return { url: server.url, port: new URL(server.url).port, received, lines: log.lines };
}

let counter = 0;
function messageBody(sessionId = SESSION): string {
  counter += 1;
  return JSON.stringify({ sessionId, clientMessageId: `cm_${String(counter).padStart(8, "0")}`, text: "hi" });
}

function post(url: string, headers: Record<string, string>, body = messageBody()) {
  return fetch(`${url}/web/api/messages`, { method: "POST", headers, body });
}

async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  return ((await response.json()) as { error: { code: string; message: string } }).error;
}

const JSON_TYPE = { "content-type": "application/json" };

describe("cross-site requests are refused before ingress", () => {
  test("text/plain and form bodies are 415 even without an Origin", async () => {
    const { url, received } = await start();
    for (const contentType of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]) {
      const response = await post(url, { "content-type": contentType });
      expect(response.status).toBe(415);
      expect(await errorOf(response)).toMatchObject({ code: "unsupported_media_type" });
    }
    expect((await post(url, { "content-type": "application/json; charset=utf-8" })).status).toBe(202);
    expect(received).toHaveLength(1);
  });

  test("a foreign Origin is 403 on the POST and on the stream; the page's own origin is served", async () => {
    const { url, port, received } = await start();
    for (const origin of [
      "https://evil.example",
      "null",
      `http://127.0.0.1:${Number(port) + 1}`,
      `http://localhost:${port}`,
    ]) {
      const response = await post(url, { ...JSON_TYPE, origin });
      expect(response.status).toBe(403);
      expect((await errorOf(response)).message).toContain("origin");
      const stream = await fetch(`${url}/web/api/stream`, {
        headers: { origin, "x-switchboard-session": SESSION, accept: "text/event-stream" },
      });
      expect(stream.status).toBe(403);
    }
    expect(received).toHaveLength(0);
    expect((await post(url, { ...JSON_TYPE, origin: url })).status).toBe(202);
    // Host localhost with the matching origin is the same page opened by another loopback name.
    expect(
      (await post(url, { ...JSON_TYPE, host: `localhost:${port}`, origin: `http://localhost:${port}` }))
        .status,
    ).toBe(202);
    expect(received).toHaveLength(2);
  });

  test("a host name that is not ours (DNS rebinding) is 403 on the page and the API", async () => {
    const { url, port, received } = await start();
    const rebound = { host: `evil.example:${port}` };
    const page = await fetch(`${url}/`, { headers: rebound });
    expect(page.status).toBe(403);
    expect((await errorOf(page)).message).toContain("SWITCHBOARD_PUBLIC_URL");
    expect(
      (await post(url, { ...JSON_TYPE, ...rebound, origin: `http://evil.example:${port}` })).status,
    ).toBe(403);
    expect((await post(url, { ...JSON_TYPE, ...rebound })).status).toBe(403);
    const stream = await fetch(`${url}/web/api/stream`, {
      headers: { ...rebound, "x-switchboard-session": SESSION },
    });
    expect(stream.status).toBe(403);
    for (const host of ["localhost.evil.example", "127.0.0.1.nip.io", "[::2]"]) {
      expect((await fetch(`${url}/`, { headers: { host: `${host}:${port}` } })).status).toBe(403);
    }
    expect(received).toHaveLength(0);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`])
      expect((await fetch(`${url}/`, { headers: { host } })).status).toBe(200);
    // The operator API and webhooks do not depend on the host name (they have their own secrets).
    expect((await fetch(`${url}/healthz`, { headers: rebound })).status).toBe(200);
  });

  test("SWITCHBOARD_PUBLIC_URL's host and origin are allowed", async () => {
    const { url, received } = await start({ publicUrl: "https://chat.example.com" });
    const headers = { ...JSON_TYPE, host: "chat.example.com", origin: "https://chat.example.com" };
    expect((await post(url, headers)).status).toBe(202);
    expect((await fetch(`${url}/`, { headers: { host: "chat.example.com" } })).status).toBe(200);
    expect((await post(url, { ...headers, origin: "https://evil.example" })).status).toBe(403);
    expect((await post(url, { ...headers, host: "chat.example.com.evil.example" })).status).toBe(403);
    expect(received).toHaveLength(1);
  });
});

describe("the web chat token", () => {
  test("without it or with a wrong one the API is 401; the page itself still loads", async () => {
    const { url, received } = await start({ token: WEB_TOKEN });
    const missing = await post(url, JSON_TYPE);
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).message).toContain("SWITCHBOARD_WEB_TOKEN");
    expect((await post(url, { ...JSON_TYPE, authorization: "Bearer wrong-token-000000" })).status).toBe(401);
    const stream = await fetch(`${url}/web/api/stream`, { headers: { "x-switchboard-session": SESSION } });
    expect(stream.status).toBe(401);
    expect(received).toHaveLength(0);
    expect((await fetch(`${url}/`)).status).toBe(200);
    expect((await post(url, { ...JSON_TYPE, authorization: `Bearer ${WEB_TOKEN}` })).status).toBe(202);
    const allowed = await fetch(`${url}/web/api/stream`, {
      headers: { "x-switchboard-session": SESSION, authorization: `Bearer ${WEB_TOKEN}` },
    });
    expect(allowed.status).toBe(200);
    await allowed.body?.cancel();
    expect(received).toHaveLength(1);
  });
});

describe("rate limits", () => {
  test("per session: over the limit is 429 with Retry-After; another session is unaffected", async () => {
    const { url, received } = await start({ messagesPerSessionPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await post(url, JSON_TYPE)).status).toBe(202);
    const limited = await post(url, JSON_TYPE);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await errorOf(limited)).toMatchObject({ code: "rate_limited" });
    expect((await post(url, JSON_TYPE, messageBody(OTHER_SESSION))).status).toBe(202);
    expect(received).toHaveLength(4);
  });

  test("per client address, across sessions and streams", async () => {
    const { url, received } = await start({ webRequestsPerIpPerMinute: 4 });
    for (let i = 0; i < 3; i++)
      expect((await post(url, JSON_TYPE, messageBody(`session_${i}_abcdefghijklmnop`))).status).toBe(202);
    const stream = await fetch(`${url}/web/api/stream`, { headers: { "x-switchboard-session": SESSION } });
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
    const limited = await post(url, JSON_TYPE, messageBody(OTHER_SESSION));
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("15");
    const streamLimited = await fetch(`${url}/web/api/stream`, {
      headers: { "x-switchboard-session": SESSION },
    });
    expect(streamLimited.status).toBe(429);
    expect(received).toHaveLength(3);
    // The page and the health checks are not counted.
    expect((await fetch(`${url}/`)).status).toBe(200);
  });
});

describe("the session id stays out of URLs", () => {
  test("the stream takes it from the X-Switchboard-Session header and refuses it in the query", async () => {
    const { url } = await start();
    const inQuery = await fetch(`${url}/web/api/stream?sessionId=${SESSION}`);
    expect(inQuery.status).toBe(400);
    expect((await errorOf(inQuery)).message).toContain("x-switchboard-session header");
    const inHeader = await fetch(`${url}/web/api/stream`, { headers: { "x-switchboard-session": SESSION } });
    expect(inHeader.status).toBe(200);
    await inHeader.body?.cancel();
  });
});

describe("over-limit bodies", () => {
  async function* chunks(totalBytes: number, chunkBytes = 16 * 1024): AsyncGenerator<Uint8Array> {
    for (let sent = 0; sent < totalBytes; sent += chunkBytes) yield new Uint8Array(chunkBytes).fill(0x61);
  }

  test("a chunked body over 64 KiB, or over the server's 1 MiB, is the JSON 413 with no error log", async () => {
    const { url, received, lines } = await start();
    for (const totalBytes of [128 * 1024, 2 * 1024 * 1024]) {
      const response = await fetch(`${url}/web/api/messages`, {
        method: "POST",
        headers: JSON_TYPE,
        body: chunks(totalBytes) as unknown as BodyInit,
        duplex: "half",
      } as RequestInit);
      expect(response.status).toBe(413);
      expect(await errorOf(response)).toEqual({
        code: "payload_too_large",
        message: "The message body is over 64 KiB.",
      });
    }
    expect(received).toHaveLength(0);
    const parsed = lines.map((line) => JSON.parse(line) as { level: string; status?: number });
    expect(parsed.filter((line) => line.level === "error")).toEqual([]);
    expect(parsed.filter((line) => line.status === 500)).toEqual([]);
    expect(parsed.filter((line) => line.status === 413).length).toBe(2);
  });

  test("a webhook route reading past the server's limit logs no error and no 500 line", async () => {
    const log = capturingLogger();
    web = createWebChannel();
    const hook = {
      method: "POST" as const,
      path: "/hook",
      handle: async (request: Request) => new Response(`read ${(await request.text()).length}`),
    };
    server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      services: testServices({ operator: unusedOperator, web, routes: [hook] }).services,
      logger: log.logger,
      maxRequestBodyBytes: 256 * 1024,
    });
    const response = await fetch(`${server.url}/hook`, {
      method: "POST",
      body: chunks(1024 * 1024) as unknown as BodyInit,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    await Bun.sleep(50);
    const parsed = log.lines.map((line) => JSON.parse(line) as { level: string; status?: number });
    expect(parsed.filter((line) => line.level === "error" || line.level === "warn")).toEqual([]);
    expect(parsed.filter((line) => line.status === 500)).toEqual([]);
  });
});
