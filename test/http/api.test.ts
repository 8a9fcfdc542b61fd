import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiOperatorService } from "../../src/cli/api-client.ts";
import { SwitchboardError } from "../../src/errors.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import type { OperatorService } from "../../src/operator/types.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import {
  capturingLogger,
  type RecordedCall,
  recordingOperator,
  type TestServices,
  testServices,
  unusedOperator,
} from "./support/services.ts";

const TOKEN = "op-token-7f3c9d2e41b8";
const auth = { authorization: `Bearer ${TOKEN}` };
const BOB_TOKEN = "bob-own-token-5d1e0c77a2";

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let server: HttpServer;
let calls: RecordedCall[];
let test_: TestServices;
let logLines: string[];

beforeAll(async () => {
  dir = tempDir("switchboard-http-");
  seed = await seedDatabase(`${dir.path}/switchboard.sqlite`);
  const recorded = recordingOperator(
    createOperatorService({
      stores: seed.stores,
      clock: seed.clock,
      budgets: {
        budgets: { perUser: { tokensPerDay: 1000 }, perSurface: { "*:*": { tokensPerMonth: 50_000 } } },
        timezone: "UTC",
      },
    }),
  );
  calls = recorded.calls;
  const { logger, lines } = capturingLogger();
  logLines = lines;
  test_ = testServices({
    operator: recorded.operator,
    operatorToken: TOKEN,
    operatorTokens: [{ name: "bob", token: BOB_TOKEN }],
  });
  server = await startHttpServer({ host: "127.0.0.1", port: 0, services: test_.services, logger });
});

afterAll(async () => {
  await server?.stop();
  seed?.stores.close();
  dir?.cleanup();
});

const get = (path: string, headers: Record<string, string> = auth) =>
  fetch(`${server.url}${path}`, { headers });
const post = (path: string, body?: unknown, headers: Record<string, string> = auth) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(["error"]);
  return body.error;
}

describe("health, readiness and metrics", () => {
  test("healthz is ok; readyz follows the checks; metrics is Prometheus text", async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, checks: { store: { ok: true } } });

    test_.readiness.ready = false;
    test_.readiness.checks.telegram = { ok: false, detail: "polling stopped: 401" };
    const notReady = await fetch(`${server.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { checks: object }).checks).toMatchObject({ telegram: { ok: false } });
    test_.readiness.ready = true;

    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    expect(await metrics.text()).toContain("switchboard_up 1");
  });

  test("an unknown path is a JSON 404; a wrong method is a 405 naming the right one", async () => {
    const missing = await fetch(`${server.url}/nope`);
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe("not_found");
    const wrongMethod = await get("/api/outbox/x/retry");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
  });

  test("a browser opening a bad URL gets an HTML page; scripts and the API keep JSON", async () => {
    const browser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
    const page = await fetch(`${server.url}/nope<script>`, { headers: browser });
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain("<h1>404 Not found</h1>");
    expect(html).toContain("No route for GET /nope%3Cscript%3E.");
    expect(html).not.toContain("<script>");
    expect(html).toContain('<a href="/">Open the web chat</a>');
    const method = await fetch(`${server.url}/healthz`, { method: "POST", headers: browser });
    expect(method.status).toBe(405);
    expect(await method.text()).toContain("<h1>405 Method not allowed</h1>");
    const api = await fetch(`${server.url}/api/nope`, { headers: { ...browser, ...auth } });
    expect(api.headers.get("content-type")).toStartWith("application/json");
    const script = await fetch(`${server.url}/nope`);
    expect(script.headers.get("content-type")).toStartWith("application/json");
  });

  test("HEAD answers where GET does, without a body, as uptime checkers expect", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const head = await fetch(`${server.url}${path}`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe("");
    }
    const wrongMethod = await fetch(`${server.url}/healthz`, { method: "POST" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("operator authentication", () => {
  test("a missing, malformed or wrong token is 401 and reaches no operator method", async () => {
    const before = calls.length;
    const attempts = [
      await get("/api/runs", {}),
      await get("/api/runs", { authorization: TOKEN }),
      await get("/api/runs", { authorization: `Bearer ${TOKEN}x` }),
      await get("/api/runs", { authorization: "Bearer short" }),
      await get("/api/no-such-route", {}),
      await post(
        `/api/outbox/${seed.ambiguous.outboxId}/resolve`,
        { outcome: "delivered", note: "x" },
        {
          authorization: "Bearer wrong-token",
        },
      ),
    ];
    for (const response of attempts) {
      expect(response.status).toBe(401);
      expect((await errorOf(response)).code).toBe("unauthorized");
    }
    expect(calls.length).toBe(before);
    expect((await seed.stores.outbox.show(seed.ambiguous.outboxId!))!.state).toBe("ambiguous");
    expect(test_.operatorActions.count).toBe(0);
  });

  test("with no operator token configured, the API and the console answer 403 saying what to set", async () => {
    const disabled = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      services: testServices({ operator: unusedOperator, operatorToken: null }).services,
      logger: capturingLogger().logger,
    });
    try {
      const api = await fetch(`${disabled.url}/api/runs`, { headers: auth });
      expect(api.status).toBe(403);
      expect((await errorOf(api)).message).toContain("SWITCHBOARD_OPERATOR_TOKEN");
      const page = await fetch(`${disabled.url}/console`);
      expect(page.status).toBe(403);
      expect(await page.text()).toContain("SWITCHBOARD_OPERATOR_TOKEN");
      expect((await fetch(`${disabled.url}/healthz`)).status).toBe(200);
    } finally {
      await disabled.stop();
    }
  });
});

describe("operator reads", () => {
  test("runs: list with filters, one run with its answer, 404 for an unknown id", async () => {
    type Listed = { items: Array<{ id: string; state: string }>; nextCursor: string | null };
    const items = async (path: string) => ((await (await get(path)).json()) as Listed).items;
    const all = await items("/api/runs");
    expect(all.map((r) => r.id)).toContain(seed.delivered.runId);
    expect(all.length).toBe(5);
    const queued = await items("/api/runs?state=queued&limit=10");
    expect(queued.map((r) => r.id)).toEqual([seed.queuedRunId]);
    const slack = await items(`/api/runs?conversation=${seed.slack.conversationId}`);
    expect(slack.length).toBe(2);
    // Empty values mean "no filter", as the CLI may send them.
    expect((await items("/api/runs?state=&conversation=&limit=&cursor=")).length).toBe(5);
    // Pages: limit and the opaque nextCursor of the previous page.
    const first = (await (await get("/api/runs?limit=3")).json()) as Listed;
    expect(first.items.map((r) => r.id)).toEqual(all.slice(0, 3).map((r) => r.id));
    const second = (await (
      await get(`/api/runs?limit=3&cursor=${encodeURIComponent(first.nextCursor!)}`)
    ).json()) as Listed;
    expect(second).toEqual({ items: all.slice(3), nextCursor: null });

    const one = (await (await get(`/api/runs/${seed.delivered.runId}`)).json()) as {
      run: { id: string };
      answerText: string;
    };
    expect(one.run.id).toBe(seed.delivered.runId);
    expect(one.answerText).toBe("Here is **the summary**.");
    const unknown = await get("/api/runs/run_nope");
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).message).toContain("run_nope");
  });

  test("conversations: list, and messages newest first paged with cursor/limit", async () => {
    const { items: list, nextCursor } = (await (await get("/api/conversations?limit=10")).json()) as {
      items: Array<{ id: string; key: string }>;
      nextCursor: string | null;
    };
    expect(nextCursor).toBeNull();
    expect(list.map((c) => c.key).sort()).toEqual([seed.slack.key, seed.telegram.key].sort());
    const first = (await (
      await get(`/api/conversations/${seed.telegram.conversationId}?limit=2`)
    ).json()) as {
      conversation: { id: string };
      items: Array<{ order: number; message: { role: string } }>;
      nextCursor: string | null;
    };
    expect(first.conversation.id).toBe(seed.telegram.conversationId);
    expect(first.items.length).toBe(2);
    expect(first.items[0]!.order).toBeGreaterThan(first.items[1]!.order);
    expect(first.nextCursor).not.toBeNull();
    const next = (await (
      await get(`/api/conversations/${seed.telegram.conversationId}?cursor=${first.nextCursor}&limit=2`)
    ).json()) as { items: Array<{ order: number }> };
    expect(next.items[0]!.order).toBeLessThan(first.items[1]!.order);
    expect((await get("/api/conversations/conv_nope")).status).toBe(404);
  });

  test("conversations?q= keeps the matching ones (any case, wildcards literal), paged with the same cursors", async () => {
    type Listed = { items: Array<{ id: string }>; nextCursor: string | null };
    const list = async (query: string) => {
      const response = await get(`/api/conversations?${query}`);
      expect(response.status).toBe(200);
      return (await response.json()) as Listed;
    };
    const slackKey = encodeURIComponent(seed.slack.key.toUpperCase());
    expect(await list(`q=${slackKey}`)).toEqual({
      items: [expect.objectContaining({ id: seed.slack.conversationId, key: seed.slack.key })],
      nextCursor: null,
    });
    expect(await list(`q=${encodeURIComponent("%")}`)).toEqual({ items: [], nextCursor: null });
    expect(await list("q=nobody-by-this-name")).toEqual({ items: [], nextCursor: null });
    // Empty is absent: the whole list.
    expect((await list("q=")).items).toHaveLength(2);
    // Both keys have a ':'; one per page, the cursor keeps to the filtered list.
    const first = await list(`q=${encodeURIComponent(":")}&limit=1`);
    expect(first.items).toHaveLength(1);
    expect(first.nextCursor).not.toBeNull();
    const second = await list(`q=${encodeURIComponent(":")}&limit=1&cursor=${first.nextCursor}`);
    expect(second.nextCursor).toBeNull();
    expect([...first.items, ...second.items].map((c) => c.id).sort()).toEqual(
      [seed.telegram.conversationId, seed.slack.conversationId].sort(),
    );
    expect(calls.at(-1)).toEqual({
      method: "conversations.list",
      args: [{ cursor: first.nextCursor, limit: 1, query: ":" }],
    });
  });

  test("outbox: list by state and conversation, one record by id", async () => {
    const ambiguous = (await (await get("/api/outbox?state=ambiguous")).json()) as {
      items: Array<{ id: string }>;
      nextCursor: string | null;
    };
    expect(ambiguous).toEqual({
      items: [expect.objectContaining({ id: seed.ambiguous.outboxId! })],
      nextCursor: null,
    });
    const slack = (await (await get(`/api/outbox?conversation=${seed.slack.conversationId}`)).json()) as {
      items: unknown[];
    };
    expect(slack.items.length).toBe(2);
    const one = (await (await get(`/api/outbox/${seed.failed.outboxId}`)).json()) as {
      id: string;
      state: string;
    };
    expect(one).toMatchObject({ id: seed.failed.outboxId!, state: "failed" });
    expect((await get("/api/outbox/obx_nope")).status).toBe(404);
  });

  test("schedules: live ones by default, ended ones with all=1, occurrences of one", async () => {
    const live = (await (await get("/api/schedules")).json()) as Array<{ id: string }>;
    expect(live.map((s) => s.id).sort()).toEqual([seed.schedules.daily.id, seed.schedules.paused.id].sort());
    const all = (await (await get("/api/schedules?all=1")).json()) as Array<{ id: string }>;
    expect(all.map((s) => s.id)).toContain(seed.schedules.cancelled.id);
    const mine = (await (
      await get(`/api/schedules?conversation=${seed.slack.conversationId}`)
    ).json()) as Array<{
      id: string;
    }>;
    expect(mine.map((s) => s.id)).toEqual([seed.schedules.paused.id]);
    const runs = await get(`/api/schedules/${seed.schedules.daily.id}/runs`);
    expect(runs.status).toBe(200);
    expect(await runs.json()).toEqual([]);
  });
});

describe("input validation", () => {
  test("bad query values are 400 input_invalid naming the parameter", async () => {
    for (const [path, field] of [
      ["/api/runs?state=bogus", "state"],
      ["/api/runs?limit=0", "limit"],
      ["/api/outbox?limit=ten", "limit"],
      ["/api/outbox?state=sent", "state"],
      ["/api/runs?sate=queued", "sate"],
      [`/api/conversations/${"c"}?after=1`, "after"],
      [`/api/runs?cursor=${"x".repeat(401)}`, "cursor"],
      ["/api/schedules?all=yes", "all"],
    ] as const) {
      const response = await get(path);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe("input_invalid");
      expect(error.message).toContain(`'${field}'`);
    }
    // A conversation search longer than 200 characters: the documented error, no store read.
    const before = calls.length;
    const long = await get(`/api/conversations?q=${"x".repeat(201)}`);
    expect(long.status).toBe(400);
    expect(await errorOf(long)).toEqual({
      code: "input_invalid",
      message: "Invalid query parameter 'q': longer than 200 characters.",
    });
    expect(calls.length).toBe(before);
    expect((await get(`/api/conversations?q=${"x".repeat(200)}`)).status).toBe(200);
    // A cursor that is not one this list handed out: refused, with what to pass instead.
    const forged = await get("/api/outbox?cursor=bm9wZQ");
    expect(forged.status).toBe(400);
    expect((await errorOf(forged)).message).toContain("not a cursor of the outbox list; pass the nextCursor");
  });

  test("bad bodies are 400 naming the field; nothing changes", async () => {
    const id = seed.ambiguous.outboxId!;
    const cases: Array<[unknown, string]> = [
      [{ outcome: "delivered" }, "note"],
      [{ outcome: "delivered", note: "   " }, "note"],
      [{ outcome: "sent", note: "checked" }, "outcome"],
      [{ outcome: "delivered", note: "checked", extra: 1 }, "extra"],
    ];
    for (const [body, field] of cases) {
      const response = await post(`/api/outbox/${id}/resolve`, body);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).message).toContain(field);
    }
    const notJson = await fetch(`${server.url}/api/outbox/${id}/retry`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{note:",
    });
    expect(notJson.status).toBe(400);
    expect((await errorOf(notJson)).message).toContain("JSON");
    const badActor = await post(
      `/api/outbox/${id}/retry`,
      {},
      { ...auth, "x-switchboard-actor": "alice smith" },
    );
    expect(badActor.status).toBe(400);
    expect((await errorOf(badActor)).message).toContain("X-Switchboard-Actor");
    expect((await seed.stores.outbox.show(id))!.state).toBe("ambiguous");
    expect(test_.operatorActions.count).toBe(0);
  });

  test("a body over 64 KiB is 413, with or without Content-Length", async () => {
    const big = JSON.stringify({ note: "x".repeat(70 * 1024) });
    const declared = await fetch(`${server.url}/api/outbox/${seed.failed.outboxId}/retry`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: big,
    });
    expect(declared.status).toBe(413);
    expect((await errorOf(declared)).code).toBe("payload_too_large");
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode("x".repeat(10 * 1024)));
        controller.close();
      },
    });
    const streamed = await fetch(`${server.url}/api/outbox/${seed.failed.outboxId}/retry`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: chunks,
    });
    expect(streamed.status).toBe(413);
    expect((await seed.stores.outbox.show(seed.failed.outboxId!))!.state).toBe("failed");
  });
});

describe("operator mutations", () => {
  test("outbox retry / resolve / cancel change the record, record the actor, and nudge the worker", async () => {
    const resolved = await post(
      `/api/outbox/${seed.ambiguous.outboxId}/resolve`,
      {
        outcome: "delivered",
        note: "seen in the chat at 09:14",
      },
      { ...auth, "x-switchboard-actor": "alice" },
    );
    expect(resolved.status).toBe(200);
    const record = (await resolved.json()) as {
      state: string;
      history: Array<{ actor: string; note?: string }>;
    };
    expect(record.state).toBe("delivered");
    expect(record.history.at(-1)).toMatchObject({
      actor: "operator:alice",
      note: "seen in the chat at 09:14",
    });

    const retried = (await (await post(`/api/outbox/${seed.failed.outboxId}/retry`)).json()) as {
      state: string;
      history: Array<{ actor: string }>;
    };
    expect(retried.state).toBe("pending");
    expect(retried.history.at(-1)!.actor).toBe("operator:api");

    const cancelled = (await (
      await post(`/api/outbox/${seed.pending.outboxId}/cancel`, { note: "duplicate" })
    ).json()) as {
      state: string;
    };
    expect(cancelled.state).toBe("cancelled");
    expect((await seed.stores.outbox.show(seed.pending.outboxId!))!.state).toBe("cancelled");
    expect(test_.operatorActions.count).toBe(3);

    // A refused change maps the service's error and does not count as an action.
    const again = await post(`/api/outbox/${seed.delivered.outboxId}/retry`);
    expect(again.status).toBe(409);
    expect((await errorOf(again)).code).toBe("state_conflict");
    const missing = await post("/api/outbox/obx_nope/cancel");
    expect(missing.status).toBe(404);
    expect(test_.operatorActions.count).toBe(3);
  });

  test("a named operator's own token records that operator, whatever X-Switchboard-Actor says", async () => {
    const retried = await post(`/api/outbox/${seed.delivered.outboxId}/retry`, undefined, {
      authorization: `Bearer ${BOB_TOKEN}`,
      "x-switchboard-actor": "mallory",
    });
    expect(retried.status).toBe(409);
    expect(calls.findLast((c) => c.method === "outbox.retry")?.args).toContain("operator:bob");
    // The shared token still takes the header's name.
    await post(`/api/outbox/${seed.delivered.outboxId}/retry`, undefined, {
      ...auth,
      "x-switchboard-actor": "carol",
    });
    expect(calls.findLast((c) => c.method === "outbox.retry")?.args).toContain("operator:carol");
  });

  test("schedules pause / resume / cancel", async () => {
    const daily = seed.schedules.daily.id;
    expect(((await (await post(`/api/schedules/${daily}/pause`)).json()) as { state: string }).state).toBe(
      "paused",
    );
    expect(((await (await post(`/api/schedules/${daily}/resume`)).json()) as { state: string }).state).toBe(
      "active",
    );
    expect(((await (await post(`/api/schedules/${daily}/cancel`)).json()) as { state: string }).state).toBe(
      "cancelled",
    );
    expect((await seed.stores.schedules.get(daily))!.state).toBe("cancelled");
    expect((await post("/api/schedules/sch_nope/pause")).status).toBe(404);
    expect(test_.operatorActions.count).toBe(6);
  });

  test("the token and request bodies never reach the log", () => {
    const log = logLines.join("\n");
    expect(logLines.length).toBeGreaterThan(10);
    expect(log).not.toContain(TOKEN);
    expect(log).not.toContain("seen in the chat");
    expect(log).not.toContain("wrong-token");
  });
});

describe("errors from the service", () => {
  test("a SwitchboardError keeps its status; anything else is a 500 without internals", async () => {
    const failing: OperatorService = {
      ...unusedOperator,
      runs: {
        list: async () => {
          throw new Error("SQLITE_CORRUPT: SELECT * FROM runs at /var/lib/switchboard/db.sqlite");
        },
        show: async () => {
          throw new SwitchboardError("version_conflict", "The run changed meanwhile; reload and try again.");
        },
      },
    };
    const { logger, lines } = capturingLogger();
    const broken = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      services: testServices({ operator: failing, operatorToken: TOKEN }).services,
      logger,
    });
    try {
      const internal = await fetch(`${broken.url}/api/runs`, { headers: auth });
      expect(internal.status).toBe(500);
      const error = await errorOf(internal);
      expect(error.code).toBe("internal");
      expect(error.message).not.toContain("SQLITE");
      const requestId = /requestId (\S+) /.exec(error.message)?.[1];
      expect(requestId).toBeDefined();
      expect(lines.some((line) => line.includes(requestId!) && line.includes("SQLITE_CORRUPT"))).toBe(true);

      const conflict = await fetch(`${broken.url}/api/runs/run_1`, { headers: auth });
      expect(conflict.status).toBe(409);
      expect(await errorOf(conflict)).toEqual({
        code: "version_conflict",
        message: "The run changed meanwhile; reload and try again.",
      });
    } finally {
      await broken.stop();
    }
  });
});

describe("the CLI's API client against this server (the contract both sides are written to)", () => {
  test("reads and mutations give the OperatorService results; errors keep their codes", async () => {
    const client = createApiOperatorService({ baseUrl: server.url, token: TOKEN, timeoutMs: 5000 });
    const runs = await client.runs.list({ conversationId: seed.telegram.conversationId, limit: 10 });
    expect(runs.items.length).toBe(3);
    expect((await client.runs.show(seed.delivered.runId))?.answerText).toBe("Here is **the summary**.");
    expect(await client.runs.show("run_nope")).toBeNull();
    expect(await client.conversations.show("conv_nope", {})).toBeNull();
    const found = await client.conversations.list({ query: seed.telegram.key.toUpperCase() });
    expect(found.items.map((c) => c.id)).toEqual([seed.telegram.conversationId]);
    await expect(client.conversations.list({ query: "y".repeat(201) })).rejects.toMatchObject({
      code: "input_invalid",
    });
    const page = await client.conversations.show(seed.slack.conversationId, { limit: 1 });
    expect(page?.items.length).toBe(1);
    expect((await client.outbox.list({ state: "cancelled" })).items.map((r) => r.id)).toEqual([
      seed.pending.outboxId!,
    ]);
    expect((await client.schedules.list({ includeEnded: true })).length).toBe(3);
    expect(await client.schedules.runs(seed.schedules.paused.id, 5)).toEqual([]);

    const before = test_.operatorActions.count;
    const cancelled = await client.outbox.cancel(seed.failed.outboxId!, "operator:bob", "wrong chat");
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.history.at(-1)).toMatchObject({ actor: "operator:bob", note: "wrong chat" });
    expect((await client.schedules.resume(seed.schedules.paused.id)).state).toBe("active");
    expect(test_.operatorActions.count).toBe(before + 2);

    await expect(client.outbox.retry("obx_nope", "operator:bob")).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(client.outbox.list({ limit: 0 })).rejects.toMatchObject({ code: "input_invalid" });
    const wrongToken = createApiOperatorService({ baseUrl: server.url, token: "nope-nope", timeoutMs: 5000 });
    await expect(wrongToken.runs.list({})).rejects.toMatchObject({ code: "unauthorized" });
  });
});

describe("budgets over the API", () => {
  test("status, raise, reset and clear need the operator token; bad input is refused and changes nothing", async () => {
    const anonymous = await post(
      `/api/budgets/${encodeURIComponent("user:telegram:42")}/raise`,
      { tokensPerDay: 5 },
      {},
    );
    expect(anonymous.status).toBe(401);
    const extra = await post(`/api/budgets/${encodeURIComponent("user:telegram:42")}/raise`, {
      tokensPerWeek: 5,
    });
    expect(extra.status).toBe(400);
    const badScope = await get(`/api/budgets/${encodeURIComponent("telegram:42")}`);
    expect(badScope.status).toBe(400);
    expect((await errorOf(badScope)).message).toContain("is not a budget scope");
    expect(await seed.stores.budgets.listOverrides()).toEqual([]);

    const client = createApiOperatorService({ baseUrl: server.url, token: TOKEN, timeoutMs: 5000 });
    const whole = await client.budgets.status("surface:*:*");
    expect(whole).toMatchObject({
      scope: "surface:*:*",
      timezone: "UTC",
      configured: { tokensPerMonth: 50_000 },
    });
    const raised = await client.budgets.raise("user:telegram:42", { tokensPerDay: 5000 }, "operator:bob");
    expect(raised.limits.map((l) => [l.field, l.limit])).toEqual([["tokensPerDay", 5000]]);
    expect(raised.override).toMatchObject({ updatedBy: "operator:bob" });
    const reset = await client.budgets.reset("user:telegram:42", "operator:bob");
    expect(reset.override?.resetAtMs).toBe(seed.clock.now());
    const overview = await client.budgets.show();
    expect(overview.scopes.map((s) => s.scope)).toEqual(["surface:*:*", "user:telegram:42"]);
    expect(Object.keys(overview.usage)).toEqual(["user", "conversation"]);
    expect(overview.periods.day.endMs).toBeGreaterThan(seed.clock.now());
    expect(overview.periods.month.endMs).toBeGreaterThanOrEqual(overview.periods.day.endMs);
    expect((await client.budgets.clear("user:telegram:42", "operator:bob")).override).toBeNull();
    const usage = await client.budgets.conversation(seed.telegram.conversationId);
    expect(usage).toMatchObject({
      conversationId: seed.telegram.conversationId,
      timezone: "UTC",
      day: { runs: 0, tokens: 0, startMs: overview.periods.day.startMs, endMs: overview.periods.day.endMs },
      month: { runs: 0, startMs: overview.periods.month.startMs },
    });
    expect((await get(`/api/conversations/${seed.telegram.conversationId}/usage`, {})).status).toBe(401);
    await expect(client.budgets.clear("user:telegram:42", "operator:bob")).rejects.toMatchObject({
      code: "not_found",
    });
  });
});

describe("access over the API (pairing codes)", () => {
  test("approve needs the operator token; list and revoke; bad, repeated and unknown input change nothing", async () => {
    const issued = await seed.stores.access.issuePairingCode({
      channel: "telegram",
      userId: "777",
      userName: "Mallory",
      updateKey: "bot1:900",
      candidate: "QRSTUVWX",
      nowMs: seed.clock.now(),
    });
    if (issued.outcome !== "issued") throw new Error(`expected a new code, got ${issued.outcome}`);

    const anonymous = await post("/api/access/approve", { code: "QRSTUVWX" }, {});
    expect(anonymous.status).toBe(401);
    expect(await seed.stores.access.isGranted("telegram", "777")).toBe(false);
    const malformed = await post("/api/access/approve", { code: "QRSTUVWX", extra: 1 });
    expect(malformed.status).toBe(400);

    const client = createApiOperatorService({ baseUrl: server.url, token: TOKEN, timeoutMs: 5000 });
    const waiting = await client.access.list();
    expect(waiting.pending).toEqual([
      { channel: "telegram", userId: "777", userName: "Mallory", expiresAtMs: issued.expiresAtMs },
    ]);
    expect(JSON.stringify(waiting)).not.toContain("QRSTUVWX");

    await expect(client.access.approve("not a code", "operator:bob")).rejects.toMatchObject({
      code: "input_invalid",
    });
    await expect(client.access.approve("WXYZ2345", "operator:bob")).rejects.toMatchObject({
      code: "not_found",
    });
    const grant = await client.access.approve("qrst-uvwx", "operator:bob");
    expect(grant).toMatchObject({ channel: "telegram", userId: "777", grantedBy: "operator:bob" });
    await expect(client.access.approve("QRSTUVWX", "operator:bob")).rejects.toMatchObject({
      code: "state_conflict",
    });
    expect((await client.access.list()).grants.map((g) => g.userId)).toEqual(["777"]);

    expect(await client.access.revoke("telegram", "777", "operator:bob")).toEqual({
      channel: "telegram",
      userId: "777",
    });
    expect(await seed.stores.access.isGranted("telegram", "777")).toBe(false);
    await expect(client.access.revoke("telegram", "777", "operator:bob")).rejects.toMatchObject({
      code: "not_found",
    });
  });
});
