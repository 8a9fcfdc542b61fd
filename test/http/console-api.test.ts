/** GET /api/dashboard and GET /api/events: operator-only, and a standby (without them) says so. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ChangeFeed } from "../../src/gateway/change-feed.ts";
import { readDashboard } from "../../src/gateway/dashboard.ts";
import { parseFrame } from "../../src/gateway/http/assets/event-stream.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createMetrics } from "../../src/gateway/metrics.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { storeGauges } from "../../src/store/sqlite/metrics.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const TOKEN = "console-api-token-77f01c";
const auth = { authorization: `Bearer ${TOKEN}` };
let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let server: HttpServer;
let standby: HttpServer;
const changes = new ChangeFeed();

beforeAll(async () => {
  dir = tempDir("switchboard-console-api-");
  seed = await seedDatabase(join(dir.path, "s.sqlite"));
  const operator = createOperatorService({ stores: seed.stores, clock: seed.clock });
  const metrics = createMetrics();
  const logger = capturingLogger().logger;
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    logger,
    services: testServices({
      operator,
      operatorToken: TOKEN,
      changes,
      dashboard: () =>
        readDashboard({
          nowMs: () => seed.clock.now(),
          gauges: async () => storeGauges(seed.stores.db),
          latency: () => metrics.latency(),
          readiness: async () => ({ checks: { database: { ok: true } } }),
          stepUsageSince: (sinceMs) => seed.stores.operator.stepUsageSince(sinceMs),
        }),
    }).services,
  });
  standby = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    logger,
    services: testServices({ operator, operatorToken: TOKEN }).services,
  });
});

afterAll(async () => {
  await server?.stop();
  await standby?.stop();
  seed?.stores.close();
  dir?.cleanup();
});

describe("GET /api/dashboard", () => {
  test("needs the operator token; answers counts, latency, usage and checks; 503 on a standby", async () => {
    expect((await fetch(`${server.url}/api/dashboard`)).status).toBe(401);
    const response = await fetch(`${server.url}/api/dashboard`, { headers: auth });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      outbox: { waiting: 1, sending: 0, ambiguous: 1, failed: 1 },
      runs: { queued: 1, inFlight: 0 },
      checks: { database: { ok: true } },
      usageToday: { steps: 0, runs: 0 },
    });
    expect((await fetch(`${server.url}/api/dashboard?x=1`, { headers: auth })).status).toBe(400);
    const none = await fetch(`${standby.url}/api/dashboard`, { headers: auth });
    expect(none.status).toBe(503);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain("standby");
  });
});

describe("GET /api/events", () => {
  test("streams changes to an operator, adds operator actions, and is refused without the token", async () => {
    expect((await fetch(`${server.url}/api/events`)).status).toBe(401);
    expect((await fetch(`${standby.url}/api/events`, { headers: auth })).status).toBe(503);
    const abort = new AbortController();
    const response = await fetch(`${server.url}/api/events`, { headers: auth, signal: abort.signal });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const frames: string[] = [];
    const next = async (): Promise<unknown> => {
      for (;;) {
        const data = frames
          .splice(0)
          .map(parseFrame)
          .find((f) => f.data !== null);
        if (data) return JSON.parse(data.data!);
        const { value } = await reader.read();
        frames.push(...(value ?? "").split("\n\n").filter((f) => f.trim() !== ""));
      }
    };
    await Bun.sleep(50);
    changes.publish({ kind: "run", runId: "run_x", conversationId: "conv_x", state: "running" });
    expect(await next()).toEqual({ kind: "run", runId: "run_x", conversationId: "conv_x", state: "running" });
    const retried = await fetch(`${server.url}/api/outbox/${seed.failed.outboxId}/retry`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    });
    expect(retried.status).toBe(200);
    expect(await next()).toEqual({ kind: "operator" });
    abort.abort();
  });
});
