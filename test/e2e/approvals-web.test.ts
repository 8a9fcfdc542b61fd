// Kept per platform: the press is the web page's own request to the gateway.
/**
 * Tool approvals in the web chat end to end: a real gateway process, the web routes over HTTP
 * (the page's own requests), a real stdio MCP server whose `append_note` appends to a file, the
 * model behind the fake LLM server.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { WebTranscriptEntry } from "../../channels/web/index.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const dir = tempDir("switchboard-e2e-approvals-web-");
const llm = startFakeLlmServer();
const notes = join(dir.path, "notes.txt");
const SESSION = "session-approvals-abcdefghijklmnop";
const TIMEOUT = 20_000;

let gateway: GatewayProcess | null = null;
afterEach(async () => {
  await gateway?.kill("SIGTERM");
  gateway = null;
});
afterAll(async () => {
  await llm.stop();
  dir.cleanup();
});

const lines = () => (existsSync(notes) ? readFileSync(notes, "utf8").trim().split("\n") : []);
const count = (line: string) => lines().filter((l) => l === line).length;

async function post(url: string, body: Record<string, unknown>) {
  const response = await fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionId: SESSION, ...body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The session's transcript as a fresh page sees it: the stream's first event. */
async function snapshot(url: string): Promise<WebTranscriptEntry[]> {
  const abort = new AbortController();
  try {
    const response = await fetch(`${url}/web/api/stream`, {
      headers: { accept: "text/event-stream", "x-switchboard-session": SESSION },
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const read = await reader.read();
      if (read.done) throw new Error("stream ended before the snapshot");
      buffered += decoder.decode(read.value);
      const data = /^data: (.*)$/m.exec(buffered);
      if (data && buffered.includes("\n\n")) {
        const event = JSON.parse(data[1]!) as { type: string; messages: WebTranscriptEntry[] };
        if (event.type === "snapshot") return event.messages;
      }
    }
  } finally {
    abort.abort();
  }
}

test("approve in the web chat: the prompt's button, a press, the effect exactly once; a forged press is refused", async () => {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
      mcpServers: {
        notes: { command: process.execPath, args: [STDIO_SERVER], env: { NOTES_FILE: notes } },
      },
    }),
  );
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: "approvals-web.sqlite",
      extra: { SWITCHBOARD_CONFIG: config, SWITCHBOARD_WEB: "on" },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
  const url = gateway.url;
  llm.setRules([
    {
      match: { lastUserContains: "remember eggs", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "eggs" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
  expect((await post(url, { clientMessageId: "message-0001", text: "please remember eggs" })).status).toBe(
    202,
  );
  const prompt = await eventually(
    async () =>
      (await snapshot(url)).find((m) => m.text.includes("Approval needed") && m.buttons !== undefined),
    TIMEOUT,
    "the approval prompt with buttons",
  );
  const labels = prompt.buttons!.flat().map((b) => b.label);
  expect(labels).toEqual(["Approve", "Deny", "Always allow in this chat"]);
  const approve = prompt.buttons!.flat().find((b) => b.label === "Approve")!.data;

  const forged = await post(url, { clientMessageId: "press-0001", action: `${approve.slice(0, -4)}AAAA` });
  expect(forged).toEqual({ status: 202, body: { kind: "action", notice: "This button is not valid." } });
  expect(count("eggs")).toBe(0);

  const press = await post(url, { clientMessageId: "press-0002", action: approve });
  expect(press).toEqual({ status: 202, body: { kind: "action", notice: "Approved." } });
  // The page's retry of the same press (same clientMessageId) is the same press.
  const retry = await post(url, { clientMessageId: "press-0002", action: approve });
  expect(retry.status).toBe(202);
  expect(retry.body.kind).not.toBe("admitted");
  await eventually(
    async () =>
      (await snapshot(url)).find((m) => m.text.startsWith("Done:") && m.text.includes('appended "eggs"')),
    TIMEOUT,
    "the answer after the approval",
  );
  const decided = await eventually(
    async () =>
      (await snapshot(url)).find((m) => m.messageId === prompt.messageId && m.buttons === undefined),
    TIMEOUT,
    "the prompt without buttons",
  );
  expect(decided.text).toContain("Approved by");
  expect(count("eggs")).toBe(1);
}, 60_000);
