/**
 * The room a Slack message belongs to (`roomKey`), which historyScope "channel" searches: a
 * thread's room is its channel, whether the thread starts at a mention or continues in a reply;
 * a DM names none (it is its own room). Scoping the search by room is tested in
 * test/search/scope.test.ts and the store's search conformance, and end to end with Telegram's
 * topics in test/e2e/history-search.test.ts.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type ParseContext, parseSlackEvent } from "../../../channels/slack/parse.ts";

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(import.meta.dir, "fixtures", `${name}.json`), "utf8"));
}

const context: ParseContext = {
  account: "T061EG9R6:A0PNCHHK2",
  botUserId: "U0LAN0Z89",
  botId: "B0LAN0Z89",
  allowOtherBots: false,
  receivedAtMs: 1_800_000_000_000,
};

function roomKeyOf(body: unknown): string | undefined {
  const outcome = parseSlackEvent(body, context);
  if (outcome.kind !== "message") throw new Error(`expected a message, got skip: ${outcome.reason}`);
  return outcome.message.roomKey;
}

/** The fixture moved to another channel: every place its channel id appears. */
function inChannel(body: Record<string, unknown>, from: string, to: string): Record<string, unknown> {
  return JSON.parse(JSON.stringify(body).replaceAll(from, to));
}

test("a thread started by a mention and a reply in it are both in their channel's room; a DM names none", () => {
  const channelRoom = "sl:T061EG9R6:A0PNCHHK2:ch:C0LAN2Q65";
  expect(roomKeyOf(fixture("app_mention"))).toBe(channelRoom);
  expect(roomKeyOf(fixture("thread_reply"))).toBe(channelRoom);
  expect(roomKeyOf(fixture("dm"))).toBeUndefined();
});

test("threads of another channel are in another room", () => {
  expect(roomKeyOf(inChannel(fixture("app_mention"), "C0LAN2Q65", "C0OTHER99"))).toBe(
    "sl:T061EG9R6:A0PNCHHK2:ch:C0OTHER99",
  );
});
