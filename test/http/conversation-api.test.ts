/**
 * The conversation API over HTTP, on a gateway composed in this process (the fake model, the
 * notes MCP server whose tool asks for approval, the Telegram emulator for proactive sends), on
 * SQLite and on PostgreSQL: idempotent admission, a run's event stream resumed after a
 * disconnect, apps kept out of each other's conversations, and /api/send through the outbox.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { e2eGatewayEnv } from "../e2e/support/gateway-env.ts";
import { eventually } from "../e2e/support/gateway-process.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { createDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { type ConversationGateway, startConversationGateway } from "./support/conversation-gateway.ts";
import { SseReader } from "./support/sse-reader.ts";

const OPERATOR = "conv-api-operator-token-01";
const CRM = "conv-api-crm-token-0123456";
const OTHER = "conv-api-other-token-98765";
const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const TIMEOUT = 20_000;

const dir = tempDir("switchboard-conversation-api-");
const llm = startFakeLlmServer();
const telegram = startTelegramEmulator();
const alice = user(4101, "Alice");
useTestServer();

afterAll(async () => {
  await llm.stop();
  await telegram.close();
  dir.cleanup();
});

function env(engine: "sqlite" | "postgres", databaseUrl?: string): Record<string, string> {
  const config = join(dir.path, `${engine}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "api:dm": { inputPolicy: "queue", delivery: "terminal", messagesPerMinute: 6 } },
      mcpServers: {
        notes: {
          command: process.execPath,
          args: [STDIO_SERVER],
          env: { NOTES_FILE: join(dir.path, `${engine}-notes.txt`) },
        },
      },
    }),
  );
  return {
    ...e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: `${engine}.sqlite`,
      ...(databaseUrl ? { databaseUrl } : {}),
    }),
    SWITCHBOARD_CONFIG: config,
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR,
    SWITCHBOARD_APP_TOKENS: `crm=${CRM},other=${OTHER}`,
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.url,
    TELEGRAM_ALLOWED_USERS: String(alice.id),
  };
}

interface Frame {
  id: string | null;
  event: string;
  data: Record<string, unknown>;
}

describe.each(["sqlite", "postgres"] as const)("the conversation API on %s", (engine) => {
  let gw: ConversationGateway;
  let dropDatabase: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    let databaseUrl: string | undefined;
    if (engine === "postgres") {
      const database = await createDatabase();
      databaseUrl = database.url;
      dropDatabase = database.drop;
    }
    gw = await startConversationGateway(env(engine, databaseUrl));
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await dropDatabase?.();
  }, 30_000);

  const call = (method: "GET" | "POST", path: string, token: string, body?: unknown, headers = {}) =>
    fetch(`${gw.server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
  const newConversation = async (token: string): Promise<string> => {
    const response = await call("POST", "/api/conversations", token, {});
    expect(response.status).toBe(201);
    const body = (await response.json()) as { conversationId: string; surface: string };
    expect(body.surface).toBe("api:dm");
    return body.conversationId;
  };
  /** Reads the run's stream until `stopAfter` frames with an id were read, or to its end. */
  const readStream = async (runId: string, token: string, lastEventId?: string, stopAfter = Infinity) => {
    const response = await call("GET", `/api/runs/${runId}/events`, token, undefined, {
      accept: "text/event-stream",
      ...(lastEventId ? { "last-event-id": lastEventId } : {}),
    });
    expect(response.status).toBe(200);
    const reader = new SseReader(response);
    const frames: Frame[] = [];
    let withId = 0;
    for (;;) {
      const frame = await reader.next(TIMEOUT);
      if (frame === null) break;
      if (frame.data === null) continue;
      frames.push({ id: frame.id, event: frame.event!, data: JSON.parse(frame.data) });
      if (frame.id !== null) withId += 1;
      if (withId >= stopAfter) {
        await reader.cancel();
        break;
      }
    }
    return frames;
  };
  const durable = (frames: Frame[]) => frames.filter((frame) => frame.id !== null);

  test("a message sent twice with one idempotency key is one run; the key with other text is refused", async () => {
    llm.reset();
    llm.setRules([{ reply: { kind: "text", text: "hello from the agent" } }]);
    const conversationId = await newConversation(CRM);
    const send = (text: string) =>
      call("POST", `/api/conversations/${conversationId}/messages`, CRM, { text, idempotencyKey: "order-1" });
    const first = await send("hello there");
    expect(first.status).toBe(202);
    const admitted = (await first.json()) as { outcome: string; runId: string };
    expect(admitted.outcome).toBe("admitted");
    const again = await send("hello there");
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ outcome: "duplicate", runId: admitted.runId });

    const conflict = await send("something else");
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { error: { code: string } }).error.code).toBe("idempotency_conflict");

    const frames = await readStream(admitted.runId, CRM);
    expect(frames.at(-1)).toMatchObject({
      event: "answer",
      data: { state: "completed", text: "hello from the agent" },
    });
    const runs = (await (await call("GET", `/api/runs?conversation=${conversationId}`, OPERATOR)).json()) as {
      items: unknown[];
    };
    expect(runs.items).toHaveLength(1);
    expect(llm.requestsContaining("hello there")).toHaveLength(1);
  }, 30_000);

  test("bad bodies get a 400 naming the field and admit nothing", async () => {
    const conversationId = await newConversation(CRM);
    const path = `/api/conversations/${conversationId}/messages`;
    const cases: Array<[unknown, string]> = [
      [{ text: "no key" }, "idempotencyKey"],
      [{ text: "   ", idempotencyKey: "k1" }, "text"],
      [{ idempotencyKey: "k2" }, "text"],
      [{ text: "x", idempotencyKey: "has spaces in it" }, "idempotencyKey"],
      [{ text: "x", idempotencyKey: "k3", extra: 1 }, "'extra'"],
      [
        { text: "x", idempotencyKey: "k4", attachments: [{ url: "http://plain.example/a.png" }] },
        "attachments.0.url",
      ],
      ["{not json", "not valid JSON"],
    ];
    for (const [body, names] of cases) {
      const response = await call("POST", path, CRM, body);
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("input_invalid");
      expect(error.message).toContain(names);
    }
    const runs = (await (await call("GET", `/api/runs?conversation=${conversationId}`, OPERATOR)).json()) as {
      items: unknown[];
    };
    expect(runs.items).toHaveLength(0);
    const send = await call("POST", "/api/send", OPERATOR, { channel: "telegram", target: "1", text: "x" });
    expect(send.status).toBe(400);
    expect(((await send.json()) as { error: { message: string } }).error.message).toContain("idempotencyKey");
  });

  test("a run's stream (tool call, approval awaited, answer) resumed after a disconnect misses nothing", async () => {
    llm.setRules([
      {
        match: { lastUserContains: "remember eggs", lastRole: "user" },
        // Slow enough that the client's first connection ends while the run is still going.
        reply: {
          kind: "tool-call",
          toolName: "notes_append_note",
          input: { text: "eggs" },
          text: "Noting it.",
          argumentChunks: 4,
          chunkDelayMs: 100,
        },
      },
      { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
    ]);
    const conversationId = await newConversation(CRM);
    const admitted = await call("POST", `/api/conversations/${conversationId}/messages`, CRM, {
      text: "please remember eggs",
      idempotencyKey: "eggs-1",
    });
    const { runId } = (await admitted.json()) as { runId: string };

    // The client reads two events, goes away, and comes back with the last id it saw.
    const before = await readStream(runId, CRM, undefined, 2);
    expect(durable(before)).toHaveLength(2);
    const lastId = durable(before).at(-1)!.id!;
    const midRun = (await (await call("GET", `/api/runs/${runId}`, OPERATOR)).json()) as {
      run: { state: string };
    };
    expect(["queued", "running"]).toContain(midRun.run.state);
    const after = await readStream(runId, CRM, lastId);
    const whole = await readStream(runId, CRM);
    expect([...durable(before), ...durable(after)]).toEqual(durable(whole));
    const events = durable(whole).map((frame) => frame.event);
    expect(events).toContain("tool-call");
    expect(events.slice(-2)).toEqual(["approval", "answer"]);
    const approval = durable(whole).at(-2)!.data as { approvalId: string; toolName: string };
    expect(approval.toolName).toBe("notes_append_note");
    expect(durable(whole).at(-1)!.data).toMatchObject({ state: "awaiting_approval" });
    expect(whole.find((f) => f.event === "tool-call")!.data).toMatchObject({ input: { text: "eggs" } });

    // Another app can neither read the run nor decide its approval; its owner can.
    expect((await call("GET", `/api/runs/${runId}/events`, OTHER)).status).toBe(404);
    expect((await call("POST", `/api/approvals/${approval.approvalId}/approve`, OTHER)).status).toBe(404);
    const decided = await call("POST", `/api/approvals/${approval.approvalId}/approve`, CRM);
    expect(decided.status).toBe(200);
    const record = (await decided.json()) as { state: string; successorRunId: string; decidedBy: string };
    expect(record.state).toBe("approved");
    expect(record.decidedBy).toContain("app.crm");
    const successor = await readStream(record.successorRunId, CRM);
    expect(successor.at(-1)).toMatchObject({ event: "answer", data: { state: "completed" } });
    expect(String(successor.at(-1)!.data.text)).toContain('appended "eggs"');
    expect(successor.some((f) => f.event === "tool-result")).toBe(true);

    // A Last-Event-ID this stream never wrote is refused.
    const bad = await call("GET", `/api/runs/${runId}/events`, CRM, undefined, { "last-event-id": "abc" });
    expect(bad.status).toBe(400);
  }, 45_000);

  test("an app token reaches only its own conversations and only the conversation API", async () => {
    llm.setRules([{ reply: { kind: "text", text: "ok" } }]);
    const mine = await newConversation(CRM);
    const theirs = await newConversation(OTHER);
    const post = (token: string, conversationId: string, key: string) =>
      call("POST", `/api/conversations/${conversationId}/messages`, token, {
        text: "hi",
        idempotencyKey: key,
      });
    expect((await post(OTHER, mine, "x1")).status).toBe(404);
    expect((await post(CRM, theirs, "x2")).status).toBe(404);
    const operatorMade = await newConversation(OPERATOR);
    expect((await post(CRM, operatorMade, "x3")).status).toBe(404);
    // The operator may use any of them.
    expect((await post(OPERATOR, mine, "x4")).status).toBe(202);
    // Operator routes are closed to app tokens, with a reason.
    for (const path of ["/api/runs", `/api/conversations/${mine}`, "/api/outbox"]) {
      const response = await call("GET", path, CRM);
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
        "conversation API",
      );
    }
    expect((await call("GET", "/api/runs", "not-a-token-at-all-xx")).status).toBe(401);
    // A platform conversation is not an app's either.
    const conversations = (await (await call("GET", "/api/conversations", OPERATOR)).json()) as {
      items: Array<{ id: string }>;
    };
    expect(conversations.items.length).toBeGreaterThan(0);
  }, 30_000);

  test("the api:dm surface's policies apply: past its messagesPerMinute a caller gets a 429", async () => {
    llm.setRules([{ reply: { kind: "text", text: "ok" } }]);
    const conversationId = await newConversation(OTHER);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await call("POST", `/api/conversations/${conversationId}/messages`, OTHER, {
        text: `message ${i}`,
        idempotencyKey: `flood-${i}`,
      });
      statuses.push(response.status);
      if (response.status === 429) expect(response.headers.get("retry-after")).toBe("60");
    }
    expect(statuses).toEqual([202, 202, 202, 202, 202, 202, 429]);
    const runs = (await (await call("GET", `/api/runs?conversation=${conversationId}`, OPERATOR)).json()) as {
      items: unknown[];
    };
    expect(runs.items).toHaveLength(6);
  }, 30_000);

  test("/api/send goes through the outbox once per key; an app no binding lists is refused", async () => {
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello bot" });
    await telegram.waitForMessage(alice.id, (m) => m.fromBot, TIMEOUT);
    const key = `notify-${engine}`;
    const body = {
      channel: "telegram",
      target: String(alice.id),
      text: `Your order shipped (${engine})`,
      idempotencyKey: key,
    };
    const first = await call("POST", "/api/send", OPERATOR, body);
    expect(first.status).toBe(202);
    const sent = (await first.json()) as { outcome: string; outboxId: string };
    expect(sent.outcome).toBe("enqueued");
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === body.text, TIMEOUT);
    const again = await call("POST", "/api/send", OPERATOR, body);
    expect(await again.json()).toMatchObject({ outcome: "duplicate", outboxId: sent.outboxId });
    const record = await eventually(
      async () => {
        const shown = (await (
          await call("GET", `/api/outbox/${sent.outboxId}`, OPERATOR)
        ).json()) as OutboxRecord;
        return shown.state === "delivered" ? shown : undefined;
      },
      TIMEOUT,
      "the send to be delivered",
    );
    expect(record.channel).toBe("telegram");
    expect(telegram.messages(alice.id).filter((m) => m.visibleText === body.text)).toHaveLength(1);

    const conflict = await call("POST", "/api/send", OPERATOR, { ...body, text: "other text" });
    expect(conflict.status).toBe(409);
    const app = await call("POST", "/api/send", CRM, { ...body, idempotencyKey: "app-send" });
    expect(app.status).toBe(403);
    expect(((await app.json()) as { error: { message: string } }).error.message).toContain("binding");
    const unknown = await call("POST", "/api/send", OPERATOR, {
      ...body,
      channel: "discord",
      idempotencyKey: "k9",
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain(
      "not configured",
    );
    const outbox = (await (await call("GET", "/api/outbox?limit=1000", OPERATOR)).json()) as {
      items: OutboxRecord[];
    };
    expect(outbox.items.filter((r) => r.markdown === body.text || r.markdown === "other text")).toHaveLength(
      1,
    );
  }, 30_000);
});
