/** Several bots on one emulator: each by its own token, with its own updates, chats and limits. */
import { afterAll, expect, test } from "bun:test";
import { Api } from "grammy";
import { botUser, privateChat, startTelegramEmulator, user } from "./index.ts";

const emulator = startTelegramEmulator();
const second = emulator.addBot({
  token: "222222222:AASecondBotTokenForTests_abcdefghij",
  bot: botUser(222222222, "second_bot", "Second"),
});
afterAll(() => emulator.close());
const alice = user(7001, "Alice");

test("each token reaches its own bot; updates, messages and calls stay with the bot they belong to", async () => {
  const first = new Api(emulator.token, { apiRoot: emulator.url });
  const other = new Api(second.token, { apiRoot: second.url });
  expect(second.url).toBe(emulator.url);
  expect((await first.getMe()).id).toBe(emulator.bot.id);
  expect((await other.getMe()).id).toBe(222222222);

  second.incoming({ chat: privateChat(alice), from: alice, text: "to the second bot" });
  expect(await first.getUpdates({ timeout: 0 })).toEqual([]);
  const updates = await other.getUpdates({ timeout: 0 });
  expect(updates.map((u) => u.message?.text)).toEqual(["to the second bot"]);

  await other.sendMessage(alice.id, "from the second bot");
  expect(
    second
      .messages(alice.id)
      .filter((m) => m.fromBot)
      .map((m) => m.text),
  ).toEqual(["from the second bot"]);
  expect(emulator.messages(alice.id)).toEqual([]);
  // A bot knows only the chats it was written to in.
  expect(second.chatIds()).toEqual([alice.id]);
  expect(emulator.chatIds()).toEqual([]);
  expect(emulator.callsOf("sendMessage")).toEqual([]);
  expect(second.callsOf("sendMessage")).toHaveLength(1);

  await expect(
    new Api("999:AAUnknownBotTokenForTests_abcdefghijk", { apiRoot: emulator.url }).getMe(),
  ).rejects.toThrow(/401/);
  expect(() => emulator.addBot({ token: second.token })).toThrow(/already serves a bot with that token/);
});
