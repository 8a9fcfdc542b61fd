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

test("a file the agent sent comes back with its message after a restart; the text after it stays text", async () => {
  db = new OutboxDb();
  const repo = db.repository();
  const media = { blobId: "a".repeat(64), filename: "chart.png", mimeType: "image/png", sizeBytes: 1234 };
  const [photo] = await repo.insert(
    [messageInsert("s1", "the chart", { channel: "web", key: "run_1:file:0", media })],
    1_000,
  );
  const [pdf] = await repo.insert(
    [
      messageInsert("s1", "", {
        channel: "web",
        key: "run_1:file:1",
        media: { ...media, blobId: "b".repeat(64), filename: "report.pdf", mimeType: "application/pdf" },
      }),
    ],
    1_010,
  );
  await repo.markSending(photo!, 1_001, { format: "rich", chunks: ["the chart"] });
  await repo.markDelivered(photo!, { messageIds: ["m0"] }, 1_002);
  // A caption too long for the file: an empty caption, then the text as a message of its own.
  await repo.markSending(pdf!, 1_011, { format: "rich", chunks: ["", "a long caption"] });
  await repo.markDelivered(pdf!, { messageIds: ["m1", "m2"] }, 1_012);
  const records = await repo.list({ destination: { channel: "web", target: "s1" }, limit: 50 });
  expect(
    webTranscriptFrom([], records).map(({ messageId, text, files }) => ({ messageId, text, files })),
  ).toEqual([
    {
      messageId: "m0",
      text: "the chart",
      files: [
        { id: "a".repeat(64), name: "chart.png", mimeType: "image/png", sizeBytes: 1234, kind: "image" },
      ],
    },
    {
      messageId: "m1",
      text: "",
      files: [
        {
          id: "b".repeat(64),
          name: "report.pdf",
          mimeType: "application/pdf",
          sizeBytes: 1234,
          kind: "file",
        },
      ],
    },
    { messageId: "m2", text: "a long caption", files: undefined },
  ]);
});

test("a message the user sent with uploads comes back with its files, typed as sniffed at upload", () => {
  const photo = "c".repeat(64);
  const notes = "d".repeat(64);
  const entries = webTranscriptFrom(
    [
      {
        key: "s1:msg_1",
        atMs: 2_000,
        payload: {
          messageId: "msg_1",
          text: "look",
          receivedAtMs: 1_999,
          attachments: [
            {
              kind: "file",
              ref: `upload:${photo}`,
              name: "garden.jpg",
              mediaType: "image/png",
              sizeBytes: 90,
            },
            // Recorded before types were kept: shown as a download, never guessed from its name.
            { kind: "file", ref: `upload:${notes}`, name: "notes.png", sizeBytes: 12 },
          ],
        },
      },
    ],
    [],
  );
  expect(entries).toEqual([
    {
      messageId: "msg_1",
      role: "user",
      text: "look",
      atMs: 1_999,
      files: [
        { id: photo, name: "garden.jpg", mimeType: "image/png", sizeBytes: 90, kind: "image" },
        { id: notes, name: "notes.png", mimeType: "application/octet-stream", sizeBytes: 12, kind: "file" },
      ],
    },
  ]);
});
