/**
 * The web chat's session id is the only key to a web user's transcript, so it must never leave
 * the HTTP request that carries it (issue 38). The attacker's trial, replayed against a real
 * gateway process: Alice chats in the web chat (a file uploaded, a tool call approved, usage
 * counted against a per-user budget), and then every surface an attacker or an operator can read
 * is searched for her session id: /metrics, every /api route that lists or shows things, the
 * console, the chat page, every log line, and every byte under the gateway's data directory (the
 * SQLite file, its WAL, the blob files). Last, the id she is shown under (the metrics label)
 * opens nothing of hers when used as a session id.
 */
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { WebTranscriptEntry } from "../../channels/web/index.ts";
import { e2eGatewayEnv } from "../e2e/support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "../e2e/support/gateway-process.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const TOKEN = `operator-${randomBytes(12).toString("hex")}`;
/** As the page makes one: random, URL-safe; mixed case, so a lower-cased copy is found too. */
const ALICE = `Al${randomBytes(24).toString("base64url")}`;
const TIMEOUT = 20_000;

const dir = tempDir("switchboard-sec-web-session-");
const llm = startFakeLlmServer();
let gateway: GatewayProcess | null = null;

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await llm.stop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

const leaks = (text: string) => text.toLowerCase().includes(ALICE.toLowerCase());

async function api(url: string, path: string): Promise<string> {
  const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = await response.text();
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${body}`);
  return body;
}

async function post(url: string, body: Record<string, unknown>) {
  const response = await fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionId: ALICE, ...body }),
  });
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) as Record<string, unknown> };
}

/** Reads an event stream until `done(text so far)`; returns everything read. */
async function readStream(
  url: string,
  headers: Record<string, string>,
  done: (text: string) => boolean,
): Promise<string> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), TIMEOUT);
  let text = "";
  try {
    const response = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: abort.signal,
    });
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    while (!done(text)) {
      const read = await reader.read();
      if (read.done) break;
      text += decoder.decode(read.value);
    }
    return text;
  } catch (error) {
    throw new Error(`GET ${url}: ${(error as Error).message}, after reading:\n${text}`);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** The transcript a page with session header `session` is shown first. */
async function snapshot(url: string, session: string): Promise<WebTranscriptEntry[]> {
  const text = await readStream(`${url}/web/api/stream`, { "x-switchboard-session": session }, (t) =>
    /^data: .*\n\n/m.test(t),
  );
  const data = /^data: (.*)$/m.exec(text)!;
  const event = JSON.parse(data[1]!) as { type: string; messages: WebTranscriptEntry[] };
  expect(event.type).toBe("snapshot");
  return event.messages;
}

function filesUnder(path: string): string[] {
  return readdirSync(path, { recursive: true })
    .map((name) => join(path, String(name)))
    .filter((file) => statSync(file).isFile());
}

test("Alice's web session id appears in no response, metric, log line, console view, API output or stored byte", async () => {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
      budgets: { timezone: "UTC", perUser: { tokensPerDay: 1_000_000 } },
      mcpServers: {
        notes: {
          command: process.execPath,
          args: [STDIO_SERVER],
          env: { NOTES_FILE: join(dir.path, "notes.txt") },
        },
      },
    }),
  );
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      extra: {
        SWITCHBOARD_CONFIG: config,
        SWITCHBOARD_WEB: "on",
        SWITCHBOARD_OPERATOR_TOKEN: TOKEN,
        SWITCHBOARD_LOG_LEVEL: "debug",
        SWITCHBOARD_LOG_FORMAT: "json",
      },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
  const url = gateway.url;
  const logs = gateway.logs;
  llm.setRules([
    {
      match: { lastUserContains: "please remember eggs", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "notes_append_note",
        input: { text: "eggs" },
        usage: { promptTokens: 120, completionTokens: 30 },
      },
    },
    {
      match: { lastRole: "tool" },
      reply: {
        kind: "text",
        text: "Done: {{lastToolResult}}",
        usage: { promptTokens: 200, completionTokens: 20 },
      },
    },
  ]);
  // The operator's live feed, open while she chats.
  // (Ids and states only, by design: it is read until Alice's answer is delivered.)
  const feed = readStream(
    `${url}/api/events`,
    { authorization: `Bearer ${TOKEN}` },
    (t) => t.includes('"state":"completed"') && (t.match(/"kind":"outbox"/g)?.length ?? 0) >= 2,
  );

  // 1. Alice chats: a file, a message, an approval.
  const uploaded = await fetch(`${url}/web/api/uploads`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream", "x-switchboard-session": ALICE },
    body: "shopping list: eggs, milk\n",
  });
  expect(uploaded.status).toBe(201);
  const { uploadId } = (await uploaded.json()) as { uploadId: string };
  const sent = await post(url, {
    clientMessageId: "message-0001",
    text: "please remember eggs",
    files: [{ uploadId, name: "list.txt" }],
  });
  expect(sent.status).toBe(202);
  const prompt = await eventually(
    async () => (await snapshot(url, ALICE)).find((m) => m.buttons !== undefined),
    TIMEOUT,
    "the approval prompt",
  );
  const approve = prompt.buttons!.flat().find((b) => b.label === "Approve")!.data;
  const press = await post(url, { clientMessageId: "press-0001", action: approve });
  expect(press.body).toEqual({ kind: "action", notice: "Approved." });
  const answered = await eventually(
    async () => {
      const messages = await snapshot(url, ALICE);
      return messages.some((m) => m.text.startsWith("Done:")) &&
        messages.some((m) => m.text.includes("Approved by"))
        ? messages
        : undefined;
    },
    TIMEOUT,
    "the answer and the decided prompt",
  );
  // Her own session still opens her transcript and her file.
  expect(answered.map((m) => m.text)).toContain("please remember eggs");
  const own = await fetch(`${url}/web/api/files/${uploadId}`, {
    headers: { "x-switchboard-session": ALICE },
  });
  expect(own.status).toBe(200);
  const responses = [sent.text, press.text, JSON.stringify(answered)];

  // 2. /metrics names her by the derived id, under a single `web:` prefix.
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const label = /switchboard_usage_tokens\{user="web:([^"]+)",period="day"\} (\d+)/.exec(metrics);
  expect(label).not.toBeNull();
  expect(Number(label![2])).toBeGreaterThan(0);
  const derived = label![1]!;
  expect(derived).toMatch(/^[A-Za-z0-9_-]{22}$/);
  expect(metrics).not.toContain("web:web:");

  // 3. Every /api route that lists or shows things, and each thing it lists.
  const outputs: Record<string, string> = {};
  const read = async (path: string) => {
    outputs[path] = await api(url, path);
    return JSON.parse(outputs[path]!) as Record<string, unknown>;
  };
  for (const path of ["/api/dashboard", "/api/access", "/api/approvals", "/api/schedules?all=1"])
    await read(path);
  await read("/api/search?q=eggs");
  await read(`/api/conversations?q=${ALICE}`);
  await read(`/api/conversations?q=${derived}`);
  const budgets = (await read("/api/budgets")) as { scopes?: Array<{ scope: string }> };
  for (const { scope } of budgets.scopes ?? []) await read(`/api/budgets/${encodeURIComponent(scope)}`);
  expect(outputs["/api/budgets"]).toContain(`user:web:${derived}`);
  const conversations = (await read("/api/conversations")) as { items: Array<{ id: string }> };
  expect(conversations.items.length).toBeGreaterThan(0);
  for (const { id } of conversations.items) {
    await read(`/api/conversations/${id}`);
    await read(`/api/conversations/${id}/usage`);
    await read(`/api/conversations/${id}/export`);
    outputs[`/api/conversations/${id}/events`] = await readStream(
      `${url}/api/conversations/${id}/events`,
      { authorization: `Bearer ${TOKEN}` },
      (t) => (t.match(/^event: terminal$/gm)?.length ?? 0) >= 2,
    );
  }
  const runs = (await read("/api/runs")) as { items: Array<{ id: string }> };
  expect(runs.items.length).toBeGreaterThan(0);
  for (const { id } of runs.items) await read(`/api/runs/${id}`);
  const outbox = (await read("/api/outbox")) as { items: Array<{ id: string }> };
  expect(outbox.items.length).toBeGreaterThan(0);
  for (const { id } of outbox.items) await read(`/api/outbox/${id}`);
  outputs["/api/events"] = await feed;
  expect(outputs["/api/approvals"]).toContain(derived);

  // 4. The console and the chat page.
  for (const path of ["/console", "/"]) outputs[path] = await (await fetch(`${url}${path}`)).text();

  // 5. The derived id opens nothing of hers: not her transcript, not her file, not her conversation.
  const asDerived = await snapshot(url, derived);
  expect(asDerived.filter((m) => m.text.includes("eggs"))).toEqual([]);
  expect(asDerived).toEqual([]);
  const file = await fetch(`${url}/web/api/files/${uploadId}`, {
    headers: { "x-switchboard-session": derived },
  });
  expect(file.status).toBe(404);

  // 6. Logs, and every byte the gateway stored, once it has stopped (its WAL checkpointed).
  await gateway.kill("SIGTERM");
  gateway = null;
  const stored = filesUnder(dir.path).filter((file) => !file.endsWith("switchboard.json"));
  expect(stored.some((file) => file.endsWith(".sqlite"))).toBe(true);

  const found = [
    ...Object.entries(outputs)
      .filter(([, body]) => leaks(body))
      .map(([path]) => `GET ${path}`),
    ...responses.filter(leaks).map((body) => `a web chat response: ${body.slice(0, 200)}`),
    ...(leaks(metrics) ? ["GET /metrics"] : []),
    ...llm
      .requests()
      .filter((r) => leaks(JSON.stringify(r)))
      .map(() => "a request to the model"),
    ...stored.filter((file) => leaks(readFileSync(file, "latin1"))).map((file) => `stored file ${file}`),
  ];
  const logLines = logs.filter(leaks);
  expect(logs.length).toBeGreaterThan(20);
  expect({ found, logLines }).toEqual({ found: [], logLines: [] });
}, 90_000);
