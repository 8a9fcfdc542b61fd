/**
 * The web chat against a real attacker page in headless Chromium (web security on): a page on
 * another origin tries every cross-site way to drive the chat (text/plain and form posts, a CORS
 * JSON POST, the stream with the session header) and a DNS-rebound host name
 * (`rebind.localhost` resolves to 127.0.0.1 in Chromium) tries to read and write it. All are refused
 * before ingress; the chat still works from its own page, with and without a web chat token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { InboundMessage } from "../../channels/types.ts";
import { createWebChannel, type WebChannel } from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { webAccessPolicy } from "../../src/gateway/http/web-guard.ts";
import { launchChromium } from "./support/browser.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";

const SESSION = "victim_session_0123456789ab";
const WEB_TOKEN = "web-token-browser-77f1c2";

let web: WebChannel;
let server: HttpServer;
let tokenServer: HttpServer;
let attacker: ReturnType<typeof Bun.serve>;
let browser: Browser;
let log: ReturnType<typeof capturingLogger>;
const inbound: InboundMessage[] = [];

/** The attacker's page: every vector runs on load and reports into `window.results`. */
function attackPage(gateway: string): string {
  const body = JSON.stringify({
    sessionId: SESSION,
    clientMessageId: "cm_attack01",
    text: "/every 1h planted",
  });
  // A text/plain form sends `name=value`: the classic trick to smuggle a JSON body.
  const [name, value] = [body.slice(0, -2), '"}'];
  return `<!doctype html><html><body>
<iframe name="sink-plain"></iframe><iframe name="sink-urlencoded"></iframe>
<form id="plain" method="POST" enctype="text/plain" target="sink-plain" action="${gateway}/web/api/messages">
  <input name='${name}' value='${value}'></form>
<form id="urlencoded" method="POST" target="sink-urlencoded" action="${gateway}/web/api/messages">
  <input name="sessionId" value="${SESSION}"><input name="text" value="/every 1h planted"></form>
<script>
window.results = {};
(async () => {
  const body = ${JSON.stringify(body)};
  try {
    await fetch("${gateway}/web/api/messages", { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body });
    results.noCorsTextPlain = "opaque";
  } catch (error) { results.noCorsTextPlain = "network error"; }
  try {
    const r = await fetch("${gateway}/web/api/messages", { method: "POST", headers: { "content-type": "application/json" }, body });
    results.corsJson = "read status " + r.status;
  } catch (error) { results.corsJson = "blocked"; }
  try {
    const r = await fetch("${gateway}/web/api/stream", { headers: { "x-switchboard-session": "${SESSION}" } });
    results.corsStream = "read status " + r.status + ": " + (await r.text()).slice(0, 200);
  } catch (error) { results.corsStream = "blocked"; }
  window.done = true;
})();
</script></body></html>`;
}

beforeAll(async () => {
  web = createWebChannel();
  await web.start(async (message) => {
    inbound.push(message);
    void web.send(message.replyTarget, {
      text: `You said: ${message.text}`,
      format: "rich",
      idempotencyKey: `run_${inbound.length}:0`,
    });
    return { kind: "admitted", runId: `run_${inbound.length}`, conversationId: "conv_web" };
  });
  log = capturingLogger();
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web }).services,
    logger: log.logger,
  });
  tokenServer = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web }).services,
    logger: capturingLogger().logger,
    webAccess: webAccessPolicy({ listenHost: "127.0.0.1", publicUrl: null, token: WEB_TOKEN }),
  });
  const gateway = server.url;
  attacker = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () =>
      new Response(attackPage(gateway), { headers: { "content-type": "text/html; charset=utf-8" } }),
  });
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  attacker?.stop(true);
  await web?.stop();
  await server?.stop();
  await tokenServer?.stop();
});

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(8000);
  return page;
}

/** Statuses the gateway answered on /web/api/*, from its request log. */
function apiStatuses(): Array<{ method: string; path: string; status: number }> {
  return log.lines
    .map((line) => JSON.parse(line) as { msg?: string; method: string; path: string; status: number })
    .filter((line) => line.path?.startsWith("/web/api/"))
    .map(({ method, path, status }) => ({ method, path, status }));
}

describe("an attacker page on another origin", () => {
  test("cannot post to the chat or read its stream, by fetch or by form", async () => {
    const page = await newPage();
    try {
      // Another site: localhost vs 127.0.0.1, and another port.
      await page.goto(`http://localhost:${attacker.port}/`);
      await page.waitForFunction(() => (window as unknown as { done?: boolean }).done === true);
      const results = await page.evaluate(() => (window as unknown as { results: unknown }).results);
      expect(results).toEqual({ noCorsTextPlain: "opaque", corsJson: "blocked", corsStream: "blocked" });

      for (const form of ["plain", "urlencoded"]) {
        const answered = page.waitForResponse(
          (response) =>
            response.url().endsWith("/web/api/messages") && response.request().method() === "POST",
        );
        await page.evaluate((id) => (document.getElementById(id) as HTMLFormElement).submit(), form);
        expect((await answered).status()).toBe(403);
      }
      expect(inbound).toEqual([]);
      const statuses = apiStatuses();
      // Each request that reached the gateway was refused: posts (403) and preflights (403/405).
      expect(statuses.length).toBeGreaterThanOrEqual(4);
      for (const entry of statuses) expect([403, 405]).toContain(entry.status);
      expect(statuses.filter((s) => s.method === "POST").length).toBeGreaterThanOrEqual(3);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("through DNS rebinding (a host name of its own that resolves to the gateway) gets nothing", async () => {
    const page = await newPage();
    try {
      const port = new URL(server.url).port;
      const response = await page.goto(`http://rebind.localhost:${port}/`);
      expect(response?.status()).toBe(403);
      expect(await page.locator("body").textContent()).toContain("does not answer to the host name");
      // Now same-origin with the gateway as far as the browser knows: it may read answers.
      const answers = await page.evaluate(async (sessionId) => {
        const post = await fetch("/web/api/messages", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ sessionId, clientMessageId: "cm_rebind01", text: "/every 1h planted" }),
        });
        const stream = await fetch("/web/api/stream", { headers: { "x-switchboard-session": sessionId } });
        return [post.status, stream.status, await stream.text()];
      }, SESSION);
      expect(answers.slice(0, 2)).toEqual([403, 403]);
      expect(answers[2]).not.toContain("snapshot");
      expect(inbound).toEqual([]);
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("the chat's own page", () => {
  test("still sends and receives, with the session id in a header, not the URL", async () => {
    const page = await newPage();
    const urls: string[] = [];
    page.on("request", (request) => urls.push(request.url()));
    try {
      await page.goto(`${server.url}/`);
      await page.locator('#connection[data-state="online"]').waitFor();
      await page.fill("#input", "hello from the real page");
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant", { hasText: "You said: hello from the real page" }).waitFor();
      expect(inbound.at(-1)).toMatchObject({ text: "hello from the real page" });
      const sessionId = await page.evaluate(() => localStorage.getItem("switchboard.sessionId"));
      expect(sessionId).toBeTruthy();
      for (const url of urls) expect(url).not.toContain(sessionId!);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("asks for the web chat token when the gateway requires one, then works", async () => {
    const page = await newPage();
    try {
      await page.goto(`${tokenServer.url}/`);
      await page.locator("#token-form").waitFor();
      await page.fill("#token", "not-the-token-000000");
      await page.press("#token", "Enter");
      await page.locator("#banner", { hasText: "refused" }).waitFor();
      await page.fill("#token", WEB_TOKEN);
      await page.press("#token", "Enter");
      await page.locator('#connection[data-state="online"]').waitFor();
      await page.fill("#input", "with a token");
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant", { hasText: "You said: with a token" }).waitFor();
    } finally {
      await page.close();
    }
  }, 30_000);
});
