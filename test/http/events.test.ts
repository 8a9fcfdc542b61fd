/**
 * The conversation event stream over HTTP, driven by a real Runtime on a temp SQLite database:
 * the ledger snapshot first, then live events, Last-Event-ID resumption and client disconnects.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import type { RuntimeEvent } from "../../src/runtime/events.ts";
import { systemClock } from "../../src/util/clock.ts";
import { createHarness, type RuntimeHarness, text } from "../support/runtime.ts";
import { capturingLogger, testServices } from "./support/services.ts";
import { SseReader } from "./support/sse-reader.ts";

const TOKEN = "events-token-4b1e88c2";
const auth = { authorization: `Bearer ${TOKEN}`, accept: "text/event-stream" };

let harness: RuntimeHarness | undefined;
let server: HttpServer | undefined;
let openFollows = 0;

afterEach(async () => {
  await server?.stop();
  await harness?.close();
  server = undefined;
  harness = undefined;
});

async function start(script: Parameters<typeof createHarness>[0], sseHeartbeatMs?: number) {
  harness = createHarness(script);
  const { runtime } = harness;
  const { services } = testServices({
    operator: createOperatorService({ stores: harness.stores, clock: systemClock }),
    operatorToken: TOKEN,
    follow: (conversationId, afterSeq, signal) => counted(runtime.follow(conversationId, afterSeq, signal)),
  });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services,
    logger: capturingLogger().logger,
    sseHeartbeatMs,
  });
  return { runtime, url: server.url };
}

async function* counted(events: AsyncIterable<RuntimeEvent>): AsyncGenerator<RuntimeEvent> {
  openFollows += 1;
  try {
    yield* events;
  } finally {
    openFollows -= 1;
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(10);
  }
}

describe("GET /api/conversations/:id/events", () => {
  test("gives the ledger first, then live events; durable ones carry id = seq", async () => {
    const { runtime, url } = await start([
      { type: "text", text: "one" },
      { type: "text", text: "two two", deltas: 2, delayMs: 30 },
    ]);
    await runtime.submit({ conversationId: "c", idempotencyKey: "a", parts: text("first") }).result;

    const response = await fetch(`${url}/api/conversations/c/events`, { headers: auth });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("text/event-stream");
    const reader = new SseReader(response);
    const frames: Array<{ id: string | null; event: RuntimeEvent; type: string | null }> = [];
    const readUntil = async (stop: (event: RuntimeEvent) => boolean) => {
      for (;;) {
        const frame = await reader.nextData();
        const event = JSON.parse(frame.data!) as RuntimeEvent;
        frames.push({ id: frame.id, event, type: frame.event });
        if (stop(event)) return;
      }
    };
    await readUntil((e) => e.type === "terminal" && e.text === "one");
    const snapshotCount = frames.length;

    const second = runtime.submit({ conversationId: "c", idempotencyKey: "b", parts: text("second") }).result;
    await readUntil((e) => e.type === "terminal" && e.text === "two two");
    await second;
    await reader.cancel();

    expect(snapshotCount).toBeGreaterThanOrEqual(3);
    for (const frame of frames) {
      expect(frame.type).toBe(frame.event.type);
      expect(frame.id).toBe(frame.event.durable ? String(frame.event.seq) : null);
    }
    const ids = frames.filter((f) => f.id !== null).map((f) => Number(f.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    const live = frames.slice(snapshotCount).map((f) => f.event);
    expect(live.some((e) => e.type === "assistant-delta")).toBe(true);
    expect(live.some((e) => e.type === "admission")).toBe(true);
  }, 15_000);

  test("resumes after Last-Event-ID (over ?cursor=) and after ?cursor= alone", async () => {
    const { runtime, url } = await start([
      { type: "text", text: "one" },
      { type: "text", text: "two" },
    ]);
    await runtime.submit({ conversationId: "c", idempotencyKey: "a", parts: text("a") }).result;
    await runtime.submit({ conversationId: "c", idempotencyKey: "b", parts: text("b") }).result;
    const lastSeq = (await harness!.stores.runtime.loadConversation("c"))!.lastSeq;
    expect(lastSeq).toBeGreaterThan(4);

    const resumed = new SseReader(
      await fetch(`${url}/api/conversations/c/events?cursor=1`, {
        headers: { ...auth, "last-event-id": "3" },
      }),
    );
    const seqs: number[] = [];
    for (let seq = 4; seq <= lastSeq; seq++) seqs.push(Number((await resumed.nextData()).id));
    expect(seqs).toEqual(Array.from({ length: lastSeq - 3 }, (_, i) => i + 4));
    await resumed.cancel();

    const byCursor = new SseReader(
      await fetch(`${url}/api/conversations/c/events?cursor=${lastSeq - 1}`, { headers: auth }),
    );
    expect((await byCursor.nextData()).id).toBe(String(lastSeq));
    await byCursor.cancel();
  }, 15_000);

  test("sends heartbeats on a quiet stream and stops following when the client goes", async () => {
    const { runtime, url } = await start([{ type: "text", text: "one" }], 50);
    await runtime.submit({ conversationId: "c", idempotencyKey: "a", parts: text("a") }).result;
    const abort = new AbortController();
    const response = await fetch(`${url}/api/conversations/c/events?cursor=999`, {
      headers: auth,
      signal: abort.signal,
    });
    const reader = new SseReader(response);
    let heartbeats = 0;
    while (heartbeats < 2) {
      const frame = await reader.next(1000);
      expect(frame?.data ?? null).toBeNull();
      if (frame?.comments.includes("heartbeat")) heartbeats += 1;
    }
    expect(openFollows).toBe(1);
    abort.abort();
    await until(() => openFollows === 0, 2000);
  }, 10_000);

  test("refuses a missing token, an unknown conversation and a bad Last-Event-ID", async () => {
    const { url } = await start([]);
    expect((await fetch(`${url}/api/conversations/c/events`)).status).toBe(401);
    const unknown = await fetch(`${url}/api/conversations/nope/events`, { headers: auth });
    expect(unknown.status).toBe(404);
    const bad = await fetch(`${url}/api/conversations/nope/events`, {
      headers: { ...auth, "last-event-id": "x" },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("Last-Event-ID");
    expect(openFollows).toBe(0);
  });

  test("stopping the server ends open streams", async () => {
    const { runtime, url } = await start([{ type: "text", text: "one" }]);
    await runtime.submit({ conversationId: "c", idempotencyKey: "a", parts: text("a") }).result;
    const reader = new SseReader(
      await fetch(`${url}/api/conversations/c/events?cursor=999`, { headers: auth }),
    );
    await reader.next();
    await until(() => openFollows === 1, 1000);
    await server!.stop();
    server = undefined;
    await until(() => openFollows === 0, 2000);
    await reader.cancel();
  }, 10_000);
});
