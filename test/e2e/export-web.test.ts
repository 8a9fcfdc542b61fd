// Kept per platform: only in the web chat does the gateway serve the export's link itself.
/**
 * /export end to end in the web chat, where the gateway itself serves the download link: a real
 * gateway process, the fake model server, the chat API over HTTP. The link works for its stated
 * lifetime whatever happens to the conversation (/new), stops at /forget (whose reply says so),
 * and is gone once the lifetime is over (the gateway restarted "a day later" with
 * SWITCHBOARD_TEST_START_MS; its start sweep removes what is no longer promised).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { WebStreamEvent, WebTranscriptEntry } from "../../channels/web/transcript.ts";
import { SseReader } from "../http/support/sse-reader.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const SESSION_HEADER = "x-switchboard-session";
const HOUR_MS = 60 * 60 * 1000;
const dir = tempDir("switchboard-e2e-export-web-");
const llm = startFakeLlmServer();
let gateway: GatewayProcess | null = null;

const env = (extra: Record<string, string> = {}) =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
    extra: { SWITCHBOARD_WEB: "on", ...extra },
  });

beforeAll(async () => {
  gateway = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS);
}, GATEWAY_START_TIMEOUT_MS);
afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await llm.stop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

/** One browser session: posts messages and follows its transcript over the event stream. */
class Session {
  private readonly entries: WebTranscriptEntry[] = [];
  private reader: SseReader | null = null;
  private sent = 0;

  constructor(readonly id: string) {}

  async open(): Promise<void> {
    const response = await fetch(`${gateway!.url}/web/api/stream`, {
      headers: { [SESSION_HEADER]: this.id, accept: "text/event-stream" },
    });
    expect(response.status).toBe(200);
    this.reader = new SseReader(response);
    const reader = this.reader;
    void (async () => {
      for (;;) {
        const frame = await reader.next(600_000).catch(() => null);
        if (frame === null) return;
        if (frame.data === null) continue;
        const event = JSON.parse(frame.data) as WebStreamEvent;
        if (event.type === "snapshot") this.entries.splice(0, this.entries.length, ...event.messages);
        else if (event.type === "message") this.entries.push(event);
      }
    })();
  }

  async close(): Promise<void> {
    await this.reader?.cancel();
  }

  /** Posts `text` and waits for an answer of ours that contains `expected`. */
  async say(text: string, expected: string): Promise<WebTranscriptEntry> {
    const before = this.entries.length;
    const response = await fetch(`${gateway!.url}/web/api/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId: this.id, clientMessageId: `m${++this.sent}-${this.id}`, text }),
    });
    expect(response.status).toBe(202);
    return eventually(
      () =>
        this.entries
          .slice(before)
          .find((entry) => entry.role === "assistant" && entry.text.includes(expected)),
      20_000,
      `an answer containing "${expected}" in session ${this.id}`,
    );
  }

  /** GET of a file the transcript shows, with this session's header. */
  download(fileId: string): Promise<Response> {
    return fetch(`${gateway!.url}/web/api/files/${fileId}`, { headers: { [SESSION_HEADER]: this.id } });
  }
}

const sessions: Session[] = [];
async function session(name: string): Promise<Session> {
  const opened = new Session(`${name}-session-0123456789`);
  await opened.open();
  sessions.push(opened);
  return opened;
}
afterEach(async () => {
  for (const opened of sessions.splice(0)) await opened.close();
});

/**
 * Waits until every blob sweep started so far has finished: sweeps run one at a time, and
 * /forget waits for its own, so a bystander's /forget answering means the earlier ones are done.
 */
async function sweepsSettled(): Promise<void> {
  const bystander = await session(`bystander${sessions.length}`);
  await bystander.say("/forget confirm", "Done: I deleted this conversation");
}

async function exportFile(chat: Session): Promise<{ id: string; caption: string }> {
  const reply = await chat.say("/export", "This conversation as Markdown");
  const file = reply.files?.[0];
  if (!file) throw new Error("the /export reply carries no file");
  return { id: file.id, caption: reply.text };
}

describe("/export in the web chat", () => {
  test("the caption states the link's lifetime; after /new the link still downloads the export", async () => {
    const alice = await session("alice");
    await alice.say("the quince jam needs 40 minutes", "echo: the quince jam needs 40 minutes");
    const exported = await exportFile(alice);
    expect(exported.caption).toMatch(
      /^This conversation as Markdown: 2 messages, exported .* UTC\. The download link works until .* UTC \(24 hours\), or until \/forget\.$/,
    );
    const before = await alice.download(exported.id);
    expect(before.status).toBe(200);
    expect(await before.text()).toContain("the quince jam needs 40 minutes");

    await alice.say("/new", "Started a new conversation");
    await sweepsSettled();
    const after = await alice.download(exported.id);
    expect(after.status).toBe(200);
    expect(await after.text()).toContain("echo: the quince jam needs 40 minutes");
    expect(after.headers.get("content-disposition")).toContain("attachment");
  }, 60_000);

  test("/forget removes the export: its reply says so, and the link answers 404", async () => {
    const bob = await session("bob");
    await bob.say("the lid goes on hot", "echo: the lid goes on hot");
    const exported = await exportFile(bob);
    expect((await bob.download(exported.id)).status).toBe(200);

    const done = await bob.say("/forget confirm", "Done: I deleted this conversation");
    expect(done.text).toContain("its /export files (their download links no longer work)");
    const gone = await bob.download(exported.id);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toContain(
      "no longer stored",
    );
  }, 60_000);

  test("the export outlives its conversation until the lifetime ends, then the link answers 404", async () => {
    const carol = await session("carol");
    await carol.say("label the jars", "echo: label the jars");
    const exported = await exportFile(carol);
    await carol.say("/new", "Started a new conversation");
    await carol.close();

    // 23 hours on: the start sweep (and the bystander's) keep what is still promised.
    await gateway!.kill("SIGTERM");
    gateway = await startGatewayProcess(
      env({ SWITCHBOARD_TEST_START_MS: String(Date.now() + 23 * HOUR_MS) }),
      GATEWAY_START_TIMEOUT_MS,
    );
    await sweepsSettled();
    expect((await carol.download(exported.id)).status).toBe(200);

    // 25 hours on: past the stated lifetime, the start sweep removes it.
    await gateway!.kill("SIGTERM");
    gateway = await startGatewayProcess(
      env({ SWITCHBOARD_TEST_START_MS: String(Date.now() + 25 * HOUR_MS) }),
      GATEWAY_START_TIMEOUT_MS,
    );
    await sweepsSettled();
    expect((await carol.download(exported.id)).status).toBe(404);
  }, 90_000);
});
