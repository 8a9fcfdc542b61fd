import { afterEach, expect, test } from "bun:test";
import { WebTranscripts } from "../../channels/web/transcript.ts";
import { webTranscriptFrom } from "../../src/gateway/web-history.ts";
import { OutboxDb } from "../outbox/support/outbox-db.ts";
import { messageInsert } from "../outbox/support/records.ts";

let db: OutboxDb | undefined;
afterEach(() => db?.close());

const BUTTONS = [
  [
    { label: "Approve", data: "ap:1:approve" },
    { label: "Deny", data: "ap:1:deny" },
  ],
];

/** The transcript a restarted gateway loads for session s1 from these delivered records. */
async function reloaded(inserts: Parameters<typeof messageInsert>[]) {
  db = new OutboxDb();
  const repo = db.repository();
  for (const [index, args] of inserts.entries()) {
    const t = 1_000 + 10 * index;
    const [id] = await repo.insert([messageInsert(...args)], t);
    await repo.markSending(id!, t + 1);
    // An edit keeps the message it edits; every other record shows a message of its own.
    const edits = args[2]?.presentation?.editOf !== undefined;
    await repo.markDelivered(id!, { messageIds: [edits ? "m0" : `m${index}`] }, t + 2);
  }
  const records = await repo.list({ destination: { channel: "web", target: "s1" }, limit: 50 });
  const transcripts = new WebTranscripts({ maxMessagesPerSession: 50, maxSessions: 10 }, async () =>
    webTranscriptFrom([], records),
  );
  await transcripts.load("s1", 5_000);
  return transcripts.snapshot("s1").map(({ messageId, text, buttons }) => ({ messageId, text, buttons }));
}

test("an approval prompt still waiting comes back with its buttons after a restart", async () => {
  expect(
    await reloaded([
      [
        "s1",
        "May I run `ledger_append`?",
        { channel: "web", key: "approval:1:prompt", presentation: { buttons: BUTTONS } },
      ],
      ["s1", "something else", { channel: "web" }],
    ]),
  ).toEqual([
    { messageId: "m0", text: "May I run `ledger_append`?", buttons: BUTTONS },
    { messageId: "m1", text: "something else", buttons: undefined },
  ]);
});

test("a decided prompt comes back as its decision, without buttons", async () => {
  expect(
    await reloaded([
      [
        "s1",
        "May I run `ledger_append`?",
        { channel: "web", key: "approval:1:prompt", presentation: { buttons: BUTTONS } },
      ],
      [
        "s1",
        "Approved by alice.",
        { channel: "web", key: "approval:1:outcome", presentation: { editOf: "approval:1:prompt" } },
      ],
    ]),
  ).toEqual([{ messageId: "m0", text: "Approved by alice.", buttons: undefined }]);
});
