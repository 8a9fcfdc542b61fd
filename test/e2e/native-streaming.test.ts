/** Native streaming (Telegram drafts in private chats) behind config, with the final answer as one message. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  groupChat,
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { type GatewayProcess, startGatewayProcess } from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-draft-");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
let gateway: GatewayProcess;
const erin = user(1201, "Erin");
const group = groupChat(-7001, "Drafts");

beforeAll(async () => {
  llm = startFakeLlmServer({
    rules: [
      {
        match: { lastUserContains: "draft please" },
        reply: {
          kind: "text",
          text: "one two three four five six seven eight",
          chunks: 8,
          chunkDelayMs: 400,
        },
      },
    ],
  });
  telegram = startTelegramEmulator();
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      surfaces: { "telegram:*": { delivery: "stream", nativeStreaming: true } },
      extra: {
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.url,
        TELEGRAM_ALLOWED_USERS: String(erin.id),
      },
    }),
  );
}, 30_000);

afterAll(async () => {
  await gateway.kill("SIGTERM");
  await telegram.close();
  await llm.stop();
  dir.cleanup();
}, 20_000);

test("a DM previews with drafts, then gets the answer as exactly one message and no edits", async () => {
  telegram.incoming({ chat: privateChat(erin), from: erin, text: "draft please" });
  const final = await telegram.waitForMessage(
    erin.id,
    (m) => m.fromBot && m.visibleText.includes("one two three four five six seven eight"),
    15_000,
  );
  expect(final.previousVersions.length).toBe(0);
  const drafts = telegram.callsOf("sendMessageDraft");
  expect(drafts.length).toBeGreaterThanOrEqual(2);
  expect(new Set(drafts.map((c) => c.params.draft_id)).size).toBe(1);
  expect(drafts.every((c) => String(c.params.text).startsWith("one"))).toBe(true);
  const times = drafts.map((c) => c.atMs);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(900);
  expect(telegram.callsOf("editMessageText").length).toBe(0);
  expect(telegram.messages(erin.id).filter((m) => m.fromBot).length).toBe(1);
}, 30_000);

test("where the platform has no drafts (a group), the stream falls back to edits", async () => {
  telegram.incoming({ chat: group, from: erin, text: "@switchboard_test_bot draft please in the group" });
  await telegram.waitForMessage(group.id, (m) => m.fromBot && m.visibleText.includes("seven eight"), 15_000);
  const draftsToGroup = telegram
    .callsOf("sendMessageDraft")
    .filter((c) => Number(c.params.chat_id) === group.id);
  expect(draftsToGroup.length).toBe(0);
  expect(telegram.callsOf("editMessageText").length).toBeGreaterThan(0);
}, 30_000);
