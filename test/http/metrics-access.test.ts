/**
 * Who may read /metrics, over the real HTTP server and real sockets: the Host check the web chat
 * has, open to a scraper on this machine, and beyond it (a non-loopback peer, or a request a
 * reverse proxy forwarded) only with SWITCHBOARD_METRICS_TOKEN or an operator token.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import type { HttpServices } from "../../src/gateway/http/types.ts";
import { webAccessPolicy } from "../../src/gateway/http/web-guard.ts";
import { nonLoopbackIPv4 } from "./support/addresses.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";

const METRICS_TOKEN = "metrics-token-3a9c51e07d42";
const OPERATOR_TOKEN = "op-token-7f3c9d2e41b8";
const ALICE_TOKEN = "alice-own-token-90b2c4d6e8";
const LAN = nonLoopbackIPv4();

let server: HttpServer | undefined;

afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function start(
  host: string,
  tokens: Partial<Pick<HttpServices, "metricsToken" | "operatorToken" | "operatorTokens">> = {
    metricsToken: METRICS_TOKEN,
    operatorToken: OPERATOR_TOKEN,
    operatorTokens: [{ name: "alice", token: ALICE_TOKEN }],
  },
  publicUrl: string | null = null,
) {
  const log = capturingLogger();
  server = await startHttpServer({
    host,
    port: 0,
    services: testServices({ operator: unusedOperator, ...tokens }).services,
    logger: log.logger,
    webAccess: webAccessPolicy({ listenHost: host, publicUrl, token: null }),
  });
  return { url: server.url, port: new URL(server.url).port, lines: log.lines };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  return ((await response.json()) as { error: { code: string; message: string } }).error;
}

describe("/metrics from this machine", () => {
  test("is open to a loopback scraper at a loopback host name, without a token", async () => {
    const { url, port } = await start("127.0.0.1");
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("switchboard_up 1");
    expect((await fetch(`${url}/metrics`, { headers: { host: `localhost:${port}` } })).status).toBe(200);
  });

  test("a foreign Host is refused with 403, as for the web chat (DNS rebinding)", async () => {
    const { url, port } = await start("127.0.0.1");
    for (const host of [`evil.example:${port}`, "evil.example", `127.0.0.1.evil.example:${port}`]) {
      const refused = await fetch(`${url}/metrics`, { headers: { host } });
      expect(refused.status).toBe(403);
      expect((await errorOf(refused)).message).toContain("/metrics does not answer to the host name");
    }
    // A token does not make a foreign name ours.
    const withToken = await fetch(`${url}/metrics`, {
      headers: { host: `evil.example:${port}`, ...bearer(METRICS_TOKEN) },
    });
    expect(withToken.status).toBe(403);
  });

  test("a request a reverse proxy forwarded needs the token, though its socket is loopback", async () => {
    const { url, port } = await start("127.0.0.1", undefined, "https://chat.example.com");
    const forwarded = { "x-forwarded-for": "203.0.113.9" };
    const refused = await fetch(`${url}/metrics`, { headers: forwarded });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain("Bearer");
    expect((await errorOf(refused)).message).toContain("SWITCHBOARD_METRICS_TOKEN");
    expect((await fetch(`${url}/metrics`, { headers: { forwarded: "for=203.0.113.9" } })).status).toBe(401);
    // The proxy passes the public host through: that is not this machine's name.
    expect((await fetch(`${url}/metrics`, { headers: { host: "chat.example.com" } })).status).toBe(401);
    const allowed = await fetch(`${url}/metrics`, { headers: { ...forwarded, ...bearer(METRICS_TOKEN) } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain("switchboard_up 1");
    expect(
      (await fetch(`${url}/metrics`, { headers: { host: `localhost:${port}`, ...forwarded } })).status,
    ).toBe(401);
  });
});

describe.skipIf(LAN === null)(`/metrics from another machine (a peer at ${LAN})`, () => {
  test("without a token 401; a wrong one 401; the metrics token or any operator token 200", async () => {
    const { url } = await start(LAN!);
    expect(new URL(url).hostname).toBe(LAN!);
    const missing = await fetch(`${url}/metrics`);
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).message).toContain("SWITCHBOARD_METRICS_TOKEN");
    expect((await fetch(`${url}/metrics`, { headers: bearer("metrics-token-wrong-000000") })).status).toBe(
      401,
    );
    for (const token of [METRICS_TOKEN, OPERATOR_TOKEN, ALICE_TOKEN]) {
      const allowed = await fetch(`${url}/metrics`, { headers: bearer(token) });
      expect(allowed.status).toBe(200);
      expect(await allowed.text()).toContain("switchboard_up 1");
    }
    // HEAD is GET without a body: the same check.
    expect((await fetch(`${url}/metrics`, { method: "HEAD" })).status).toBe(401);
  });

  test("a foreign Host is 403 from there too", async () => {
    const { url, port } = await start(LAN!);
    const refused = await fetch(`${url}/metrics`, {
      headers: { host: `evil.example:${port}`, ...bearer(METRICS_TOKEN) },
    });
    expect(refused.status).toBe(403);
  });

  test("with no token configured at all, 403 says which variable to set", async () => {
    const { url } = await start(LAN!, { metricsToken: null, operatorToken: null });
    const refused = await fetch(`${url}/metrics`);
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toContain("set SWITCHBOARD_METRICS_TOKEN");
  });

  test("the operator API still takes only operator tokens, not the metrics token", async () => {
    const { url } = await start(LAN!);
    expect((await fetch(`${url}/api/runs`, { headers: bearer(METRICS_TOKEN) })).status).toBe(401);
  });
});
