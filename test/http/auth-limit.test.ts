/**
 * Failed authentication is limited per client address on every route that takes a token, over the
 * real HTTP server: 300 wrong tokens to /api and to the web chat end in 429 with Retry-After, a
 * log line without the token, and counters in /metrics; the right token still gets in meanwhile.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createWebChannel, type WebChannel } from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { webAccessPolicy } from "../../src/gateway/http/web-guard.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { nonLoopbackIPv4 } from "./support/addresses.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const OPERATOR_TOKEN = "op-token-7f3c9d2e41b8";
const WEB_TOKEN = "web-token-5f0c2a9e71d3";
const METRICS_TOKEN = "metrics-token-3a9c51e07d42";
const WRONG = "wrong-token-0123456789ab";
const SESSION = "sess_0123456789abcdefXY";
const LAN = nonLoopbackIPv4();
/** The server's default: failures per address as a burst, then per minute. */
const BURST = 10;

let server: HttpServer | undefined;
let web: WebChannel | undefined;
let seed: Seed | undefined;
let dir: ReturnType<typeof tempDir> | undefined;

afterEach(async () => {
  await web?.stop();
  await server?.stop();
  seed?.stores.close();
  dir?.cleanup();
  server = web = seed = dir = undefined;
});

/** A server whose rate limits read `clock.nowMs`, so a lockout lasts as long as the test says. */
async function start(host = "127.0.0.1") {
  const clock = { nowMs: Date.UTC(2026, 0, 1) };
  dir = tempDir("switchboard-auth-limit-");
  seed = await seedDatabase(`${dir.path}/switchboard.sqlite`);
  web = createWebChannel();
  const received: string[] = [];
  await web.start(async (inbound) => {
    received.push(inbound.updateKey);
    return { kind: "admitted", runId: `run_${received.length}`, conversationId: "conv_1" };
  });
  const log = capturingLogger();
  server = await startHttpServer({
    host,
    port: 0,
    services: testServices({
      operator: createOperatorService({ stores: seed.stores, clock: seed.clock }),
      web,
      operatorToken: OPERATOR_TOKEN,
      metricsToken: METRICS_TOKEN,
    }).services,
    logger: log.logger,
    webAccess: webAccessPolicy({ listenHost: host, publicUrl: null, token: WEB_TOKEN }),
    clock: { now: () => clock.nowMs },
  });
  return { url: server.url, port: new URL(server.url).port, lines: log.lines, clock, received };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Statuses of `n` requests made one after another. */
async function statuses(n: number, request: () => Promise<Response>): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < n; i++) {
    const response = await request();
    await response.body?.cancel();
    responses.push(response);
  }
  return responses;
}

function counts(responses: Response[]): Record<number, number> {
  const byStatus: Record<number, number> = {};
  for (const r of responses) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  return byStatus;
}

async function metricsText(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

let message = 0;
function postMessage(url: string, token: string | null): Promise<Response> {
  message += 1;
  return fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === null ? {} : bearer(token)) },
    body: JSON.stringify({
      sessionId: SESSION,
      clientMessageId: `cm_${String(message).padStart(8, "0")}`,
      text: "hi",
    }),
  });
}

describe("wrong operator tokens on /api", () => {
  test("300 tries: 10 are 401, the rest 429 with Retry-After; the right token still 200", async () => {
    const { url, lines, clock } = await start();
    const tries = await statuses(300, () => fetch(`${url}/api/runs`, { headers: bearer(WRONG) }));
    expect(counts(tries)).toEqual({ 401: BURST, 429: 300 - BURST });
    const limited = tries[BURST]!;
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    // Without a token at all counts as a failure too.
    expect((await fetch(`${url}/api/runs`)).status).toBe(429);

    // The right token is never slowed or refused by the lockout, from the same address.
    for (let i = 0; i < 5; i++)
      expect((await fetch(`${url}/api/runs`, { headers: bearer(OPERATOR_TOKEN) })).status).toBe(200);

    const metrics = await metricsText(url);
    expect(metrics).toContain('switchboard_auth_failures_total{route="api"} 301');
    expect(metrics).toContain(`switchboard_auth_limited_total{route="api"} ${301 - BURST}`);
    expect(metrics).toContain('switchboard_auth_failures_total{route="web"} 0');

    const logged = lines.filter((l) => l.includes("http.auth_limited"));
    // One line per address a minute, not one per refusal.
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({
      event: "http.auth_limited",
      route: "api",
      client: "127.0.0.1",
    });
    for (const line of lines) {
      expect(line).not.toContain(WRONG);
      expect(line).not.toContain(OPERATOR_TOKEN);
    }

    // Once the address slows down, a wrong token is an ordinary 401 again.
    clock.nowMs += 60_000;
    expect((await fetch(`${url}/api/runs`, { headers: bearer(WRONG) })).status).toBe(401);
  });
});

describe("wrong web chat tokens", () => {
  test("300 tries: 429 with Retry-After past the limit; the right token still 202 and its messages arrive", async () => {
    const { url, received } = await start();
    const tries = await statuses(300, () => postMessage(url, WRONG));
    expect(received).toHaveLength(0);
    expect(counts(tries)).toEqual({ 401: BURST, 429: 300 - BURST });
    expect(Number(tries.at(-1)!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Guesses did not use up the address's chat requests: the token holder behind it gets through.
    for (let i = 0; i < 5; i++) expect((await postMessage(url, WEB_TOKEN)).status).toBe(202);
    expect(received).toHaveLength(5);
    const metrics = await metricsText(url);
    expect(metrics).toContain('switchboard_auth_failures_total{route="web"} 300');
    expect(metrics).toContain(`switchboard_auth_limited_total{route="web"} ${300 - BURST}`);
  });
});

describe.skipIf(LAN === null)("per client address", () => {
  test("one address locked out of /api leaves another one's wrong token a plain 401", async () => {
    const { port } = await start("0.0.0.0");
    const loopback = `http://127.0.0.1:${port}`;
    const other = `http://${LAN}:${port}`;
    await statuses(BURST, () => fetch(`${loopback}/api/runs`, { headers: bearer(WRONG) }));
    expect((await fetch(`${loopback}/api/runs`, { headers: bearer(WRONG) })).status).toBe(429);
    expect((await fetch(`${other}/api/runs`, { headers: bearer(WRONG) })).status).toBe(401);
  });

  test("wrong /metrics tokens from beyond loopback are limited; the right one still reads", async () => {
    const { port } = await start("0.0.0.0");
    // Listening on every interface, a request at the LAN address names a host the gateway does
    // not know as its own; call it by the loopback name it does.
    const url = `http://${LAN}:${port}`;
    const host = { host: `localhost:${port}` };
    const tries = await statuses(30, () =>
      fetch(`${url}/metrics`, { headers: { ...host, ...bearer(WRONG) } }),
    );
    expect(counts(tries)).toEqual({ 401: BURST, 429: 30 - BURST });
    const allowed = await fetch(`${url}/metrics`, { headers: { ...host, ...bearer(METRICS_TOKEN) } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain(`switchboard_auth_limited_total{route="metrics"} ${30 - BURST}`);
  });
});
