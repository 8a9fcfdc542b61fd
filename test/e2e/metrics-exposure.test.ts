/**
 * /metrics on the real `switchboard start` process listening on a non-loopback address of this
 * machine: SWITCHBOARD_METRICS_TOKEN from the environment reaches the server, a scrape without it
 * is refused, a foreign Host is refused, and the token never shows in the log.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { nonLoopbackIPv4 } from "../http/support/addresses.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const METRICS_TOKEN = "metrics-token-e2e-0123456789";
const OPERATOR_TOKEN = "operator-token-e2e-0123456789";
const LAN = nonLoopbackIPv4();
const dir = tempDir("switchboard-e2e-metrics-");
let llm: FakeLlmServer;
let gateway: GatewayProcess | undefined;

beforeAll(() => {
  llm = startFakeLlmServer();
});
afterAll(async () => {
  await gateway?.kill();
  await llm.stop();
  dir.cleanup();
});

test.skipIf(LAN === null)(
  `a gateway on ${LAN}: /metrics needs SWITCHBOARD_METRICS_TOKEN (or the operator token) from there`,
  async () => {
    gateway = await startGatewayProcess(
      e2eGatewayEnv({
        dir: dir.path,
        llm,
        extra: {
          SWITCHBOARD_HTTP_HOST: LAN!,
          SWITCHBOARD_METRICS_TOKEN: METRICS_TOKEN,
          SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
        },
      }),
      GATEWAY_START_TIMEOUT_MS,
    );
    const url = `${gateway.url}/metrics`;
    expect(new URL(url).hostname).toBe(LAN!);
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: "Bearer not-the-metrics-token" } })).status).toBe(
      401,
    );
    for (const token of [METRICS_TOKEN, OPERATOR_TOKEN]) {
      const scrape = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(scrape.status).toBe(200);
      const text = await scrape.text();
      expect(text).toContain("switchboard_gateway_active 1");
      expect(text).toContain('switchboard_auth_failures_total{route="metrics"} 2');
    }
    const rebound = await fetch(url, {
      headers: { host: `evil.example:${new URL(url).port}`, authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(rebound.status).toBe(403);
    expect(gateway.logs.join("\n")).not.toContain(METRICS_TOKEN);
  },
  GATEWAY_START_TIMEOUT_MS + 10_000,
);
