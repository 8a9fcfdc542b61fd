/**
 * Files out end to end on Telegram: a real gateway process, the fake model server calling
 * send_file with a URL on a local page server, and the Telegram emulator recording uploads. A
 * SIGKILL while the upload hangs leaves the record ambiguous: Telegram has no idempotency key.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-media-out-tg-", startTelegramEmulator);
const { llm, platform: telegram } = fixture;
const alice = user(3001, "Alice");
const bob = user(3002, "Bob");

const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1,
  8, 6, 0, 0, 0,
]);

let pages: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  pages = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === "/chart.png"
        ? new Response(PNG)
        : new Response("missing", { status: 404 }),
  });
});
afterAll(() => pages.stop(true));

function env(): Record<string, string> {
  return telegramGatewayEnv(fixture, {
    allowed: [alice.id, bob.id],
    surfaces: { "telegram:dm": { delivery: "terminal", inputPolicy: "queue" } },
    extra: { SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on" },
  });
}

function sendFileWhen(prompt: string) {
  llm.addRules([
    {
      match: { lastUserContains: prompt, lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "send_file",
        input: { url: `http://127.0.0.1:${pages.port}/chart.png`, caption: "the **chart**" },
      },
    },
  ]);
}

let gateway: GatewayProcess | null = null;
afterAll(async () => {
  await gateway?.kill("SIGTERM");
}, GATEWAY_START_TIMEOUT_MS);

test("the agent sends a file: it appears once, as a photo with its caption, before the answer", async () => {
  llm.setRules([{ match: { lastRole: "tool" }, reply: { kind: "text", text: "Here it is." } }]);
  sendFileWhen("send me the chart");
  gateway = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "send me the chart" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText === "Here it is.", 30_000);
  await waitUntilSettled(env().SWITCHBOARD_DB!);
  const shown = telegram.messages(alice.id).filter((m) => m.fromBot);
  expect(shown.map((m) => [m.file?.method ?? "text", m.visibleText])).toEqual([
    ["sendPhoto", "the chart"],
    ["text", "Here it is."],
  ]);
  expect([...shown[0]!.file!.bytes]).toEqual([...PNG]);
  expect(shown[0]!.file!.filename).toBe("chart.png");
  expect(telegram.callsOf("sendPhoto")).toHaveLength(1);
}, 60_000);

test("SIGKILL while the upload hangs: after the restart the file record is ambiguous and not sent again", async () => {
  const dbEnv = { SWITCHBOARD_DB: env().SWITCHBOARD_DB! };
  sendFileWhen("send bob the chart");
  gateway ??= await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
  telegram.injectFault("sendPhoto", { kind: "hang" });
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "send bob the chart" });
  await telegram.waitForCall(
    "sendPhoto",
    (call) => Number(call.params.chat_id) === bob.id && call.fault === "hang",
    30_000,
  );
  await gateway.kill("SIGKILL");
  gateway = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
  const ambiguous = await eventually(
    async () => {
      const records = await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], dbEnv);
      return records.find((record) => record.kind === "message" && record.media?.filename === "chart.png");
    },
    15_000,
    "the interrupted upload to be listed as ambiguous",
  );
  expect(ambiguous.lastError).toMatch(/interrupted while sending/);
  // A later reply to another chat goes out: the restarted sender is past the ambiguous record.
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "anything new" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText === "echo: anything new", 15_000);
  expect(telegram.callsOf("sendPhoto").filter((call) => Number(call.params.chat_id) === bob.id)).toHaveLength(
    1,
  );
  expect(telegram.messages(bob.id).filter((m) => m.fromBot && m.file)).toEqual([]);
}, 90_000);
