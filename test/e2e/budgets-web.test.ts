// Kept per platform: web sessions and SWITCHBOARD_WEB_TOKEN are budget scopes only the web chat has.
/**
 * The web chat's budgets end to end: a real gateway process, the fake model server reporting
 * token usage, the chat API over HTTP. Each browser session is a user of its own, so a new
 * session id would start a fresh per-user budget; `budgets.web.tokensPerDay` is shared by every
 * session, and `budgets.web.tokensPerDayPerToken` by everyone holding SWITCHBOARD_WEB_TOKEN.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
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

const WEB_TOKEN = "web-token-budgets-0123456789abcdef";
const dir = tempDir("switchboard-e2e-budgets-web-");
const llm = startFakeLlmServer();
let gateway: GatewayProcess | null = null;
const readers: SseReader[] = [];

llm.addRules(
  Array.from({ length: 12 }, (_, i) => ({
    match: { lastUserContains: `spend #${i + 1}.` },
    reply: {
      kind: "text" as const,
      text: `spent #${i + 1}.`,
      usage: { promptTokens: 350, completionTokens: 50 },
    },
  })),
);

afterEach(async () => {
  for (const reader of readers.splice(0)) await reader.cancel();
  await gateway?.kill("SIGTERM");
  gateway = null;
}, GATEWAY_STOP_TIMEOUT_MS);
afterAll(async () => {
  await llm.stop();
  dir.cleanup();
});

async function startWith(budgets: Record<string, unknown>, extra: Record<string, string> = {}) {
  const config = join(dir.path, `budgets-${Object.keys(budgets.web as object).join("-")}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
      budgets: { timezone: "UTC", ...budgets },
    }),
  );
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: `${Object.keys(budgets.web as object).join("-")}.sqlite`,
      extra: { SWITCHBOARD_WEB: "on", SWITCHBOARD_CONFIG: config, ...extra },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
}

/** A browser session (its own id: its own web user) that posts and reads its answers. */
async function browserSession(name: string, token?: string) {
  const id = `${name}-session-0123456789`;
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const entries: WebTranscriptEntry[] = [];
  const response = await fetch(`${gateway!.url}/web/api/stream`, {
    headers: { "x-switchboard-session": id, accept: "text/event-stream", ...auth },
  });
  expect(response.status).toBe(200);
  const reader = new SseReader(response);
  readers.push(reader);
  void (async () => {
    for (;;) {
      const frame = await reader.next(600_000).catch(() => null);
      if (frame === null) return;
      if (frame.data === null) continue;
      const event = JSON.parse(frame.data) as WebStreamEvent;
      if (event.type === "message") entries.push(event);
    }
  })();
  let sent = 0;
  return {
    async say(text: string, expected: string): Promise<string> {
      const before = entries.length;
      const posted = await fetch(`${gateway!.url}/web/api/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ sessionId: id, clientMessageId: `${name}-message-${++sent}`, text }),
      });
      expect(posted.status).toBe(202);
      const answer = await eventually(
        () => entries.slice(before).find((e) => e.role === "assistant" && e.text.includes(expected)),
        20_000,
        `an answer containing "${expected}" for ${name}`,
      );
      return answer.text;
    },
  };
}

describe("web chat budgets", () => {
  test("budgets.web.tokensPerDay: two sessions share it, and the second is refused once their sum reaches it", async () => {
    // A per-user budget as large as the shared one: each session alone stays under it.
    await startWith({ perUser: { tokensPerDay: 1000 }, web: { tokensPerDay: 1000 } });
    const first = await browserSession("first");
    const second = await browserSession("second");
    await first.say("spend #1.", "spent #1.");
    await first.say("spend #2.", "spent #2.");
    // 800 of 1,000 used: the second session's first message still passes (1,200 then).
    await second.say("spend #3.", "spent #3.");
    const refusal = await second.say("spend #4.", "is used up");
    expect(refusal).toStartWith(
      "I can't answer this: the budget all web chat users share of 1,000 tokens a day is used up. It resets ",
    );
    expect(refusal).toContain("I did not read this message; please send it again then.");
    // A fresh session id is no way around it.
    const third = await browserSession("third");
    expect(await third.say("spend #5.", "is used up")).toContain("the budget all web chat users share");
    expect(llm.requestsContaining("spend #4.")).toHaveLength(0);
  }, 60_000);

  test("budgets.web.tokensPerDayPerToken applies to everyone with SWITCHBOARD_WEB_TOKEN", async () => {
    await startWith({ web: { tokensPerDayPerToken: 700 } }, { SWITCHBOARD_WEB_TOKEN: WEB_TOKEN });
    const first = await browserSession("token-first", WEB_TOKEN);
    const second = await browserSession("token-second", WEB_TOKEN);
    await first.say("spend #6.", "spent #6.");
    await second.say("spend #7.", "spent #7.");
    const refusal = await first.say("spend #8.", "is used up");
    expect(refusal).toStartWith(
      "I can't answer this: the budget everyone with this web chat token shares of 700 tokens a day is used up.",
    );
  }, 60_000);
});
