/**
 * SWITCHBOARD_OPENAI_COMPAT=on: `POST /v1/chat/completions` on a gateway composed in this process
 * (SQLite, the fake model): the answer as an OpenAI completion, streamed or not, a retried request
 * is the same run, and an app reaches only its own conversations.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { e2eGatewayEnv } from "../e2e/support/gateway-env.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { type ConversationGateway, startConversationGateway } from "./support/conversation-gateway.ts";

const OPERATOR = "compat-operator-token-0001";
const CRM = "compat-crm-token-000000001";
const OTHER = "compat-other-token-0000001";
const dir = tempDir("switchboard-openai-compat-");
const llm = startFakeLlmServer();
let gw: ConversationGateway;
let off: ConversationGateway;

beforeAll(async () => {
  const env = (name: string, compat: "on" | "off") => ({
    ...e2eGatewayEnv({ dir: dir.path, llm, dbFile: `${name}.sqlite` }),
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR,
    SWITCHBOARD_APP_TOKENS: `crm=${CRM},other=${OTHER}`,
    SWITCHBOARD_OPENAI_COMPAT: compat,
  });
  gw = await startConversationGateway(env("on", "on"));
  off = await startConversationGateway(env("off", "off"));
}, 30_000);

afterAll(async () => {
  await gw?.stop();
  await off?.stop();
  await llm.stop();
  dir.cleanup();
});

const complete = (
  server: ConversationGateway,
  token: string,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`${server.server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

test("off by default: there is no such route", async () => {
  const response = await complete(off, OPERATOR, { messages: [{ role: "user", content: "hi" }], user: "u1" });
  expect(response.status).toBe(404);
});

test("a completion answers with the agent's reply; the same request again is the same run", async () => {
  llm.reset();
  llm.setRules([{ reply: { kind: "text", text: "hello from compat" } }]);
  const body = {
    model: "any",
    user: "alice",
    messages: [
      { role: "system", content: "ignored: the gateway has its own" },
      { role: "user", content: "say hello via compat" },
    ],
  };
  const first = await complete(gw, CRM, body);
  expect(first.status).toBe(200);
  const completion = (await first.json()) as {
    id: string;
    object: string;
    choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
  };
  expect(completion.object).toBe("chat.completion");
  expect(completion.choices[0]).toMatchObject({
    message: { role: "assistant", content: "hello from compat" },
    finish_reason: "stop",
  });
  const again = (await (await complete(gw, CRM, body)).json()) as { id: string };
  expect(again.id).toBe(completion.id);
  expect(llm.requestsContaining("say hello via compat")).toHaveLength(1);
}, 20_000);

test("streamed: chunks that add up to the answer, then [DONE]", async () => {
  llm.setRules([{ reply: { kind: "text", text: "one two three four five", chunks: 5 } }]);
  const response = await complete(gw, CRM, {
    user: "bob",
    stream: true,
    messages: [{ role: "user", content: [{ type: "text", text: "count for me" }] }],
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  const text = await response.text();
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice("data: ".length));
  expect(data.at(-1)).toBe("[DONE]");
  const chunks = data
    .slice(0, -1)
    .map(
      (line) =>
        JSON.parse(line) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> },
    );
  expect(chunks.map((c) => c.choices[0]!.delta.content ?? "").join("")).toBe("one two three four five");
  expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
}, 20_000);

test("the conversation is the caller's: by user, or by header only when it is theirs", async () => {
  llm.setRules([{ reply: { kind: "text", text: "ok" } }]);
  const created = (await (
    await fetch(`${gw.server.url}/api/conversations`, {
      method: "POST",
      headers: { authorization: `Bearer ${CRM}`, "content-type": "application/json" },
      body: "{}",
    })
  ).json()) as { conversationId: string };
  const body = { messages: [{ role: "user", content: "in a chosen conversation" }] };
  const header = { "x-switchboard-conversation": created.conversationId };
  expect((await complete(gw, OTHER, body, header)).status).toBe(404);
  expect((await complete(gw, CRM, body, header)).status).toBe(200);
  const runs = (await (
    await fetch(`${gw.server.url}/api/runs?conversation=${created.conversationId}`, {
      headers: { authorization: `Bearer ${OPERATOR}` },
    })
  ).json()) as { items: unknown[] };
  expect(runs.items).toHaveLength(1);
  const unnamed = await complete(gw, CRM, body);
  expect(unnamed.status).toBe(400);
  expect(((await unnamed.json()) as { error: { message: string } }).error.message).toContain("'user'");
  const lastNotUser = await complete(gw, CRM, { user: "u", messages: [{ role: "assistant", content: "x" }] });
  expect(lastNotUser.status).toBe(400);
}, 20_000);
