/**
 * Hostile updates through long polling: the Bot API hands the gateway whatever it has, and an
 * update the parser cannot read must be skipped and confirmed, not retried forever while every
 * update behind it waits (polling confirms updates strictly in order).
 */
import { beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { telegramGatewayEnv, useE2eFixture } from "../e2e/support/fixture.ts";
import type { GatewayProcess } from "../e2e/support/gateway-process.ts";
import { privateChat, startTelegramEmulator, type UpdateBody, user } from "../emulators/telegram/index.ts";
import { isHealthy, storedCounts } from "./support/gateway-db.ts";

const alice = user(1001, "Alice");
const fixture = useE2eFixture("switchboard-fuzz-tgpoll-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const dbPath = join(dir.path, "gateway.sqlite");
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await fixture.startGateway(
    telegramGatewayEnv(fixture, { allowed: [alice.id], extra: { SWITCHBOARD_LOG_LEVEL: "debug" } }),
  );
}, 20_000);

const chat = { id: alice.id, type: "private", first_name: "Alice" };
// Every body keeps a chat object: the emulator files pushed updates under their chat. Bodies with
// no message object at all are covered by the webhook suite.
const hostile: Array<[string, unknown]> = [
  [
    "chat type unknown",
    { message: { message_id: 2, date: 1, chat: { id: 1, type: "space" }, from: alice, text: "x" } },
  ],
  [
    "chat id a string",
    { message: { message_id: 2, date: 1, chat: { ...chat, id: "1001" }, from: alice, text: "x" } },
  ],
  ["from without id", { message: { message_id: 3, date: 1, chat, from: { first_name: "A" }, text: "who" } }],
  ["text is an object", { message: { message_id: 3, date: 1, chat, from: alice, text: { bold: "x" } } }],
  ["date missing", { message: { message_id: 3, chat, from: alice, text: "when" } }],
  ["photo sizes are strings", { message: { message_id: 4, date: 1, chat, from: alice, photo: ["big"] } }],
  [
    "caption entity without user",
    {
      message: {
        message_id: 5,
        date: 1,
        chat: { id: -5001, type: "group", title: "Team" },
        from: alice,
        caption: "c",
        caption_entities: [{ type: "text_mention", offset: 0, length: 1 }],
        document: { file_id: "f" },
      },
    },
  ],
  [
    "reply_to_message is a number",
    { message: { message_id: 6, date: 1, chat, from: alice, text: "re", reply_to_message: 5 } },
  ],
];

test("malformed updates are skipped and confirmed; the message behind them is answered", async () => {
  const pushed = hostile.map(([, body]) => telegram.pushUpdate(body as UpdateBody));
  const { update: valid } = telegram.incoming({
    chat: privateChat(alice),
    from: alice,
    text: "after the junk",
  });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("echo: after the junk"),
    10_000,
  );
  for (const update of pushed) await telegram.waitForConfirmed(update.update_id, 5_000);
  await telegram.waitForConfirmed(valid.update_id, 5_000);

  const skipped = gateway.events().filter((e) => e.event === "telegram.update_skipped");
  expect(skipped.map((e) => e.updateId)).toEqual(pushed.map((u) => u.update_id));
  expect(gateway.events().some((e) => e.event === "telegram.ingress_failed")).toBe(false);
  expect(llm.requests().map((r) => r.lastUserText)).toEqual(["after the junk"]);
  expect(storedCounts(dbPath)).toMatchObject({ runs: 1, receipts: 1 });
  expect(await isHealthy(gateway.url)).toBe(true);
}, 25_000);
