/**
 * What the Discord adapter makes of attachments, in process against the emulator: the kind from
 * the content type, the size and a voice message's length as Discord states them (so limits apply
 * before any download), and openFile fetching the CDN URL once. What happens to the file next
 * (scaling, transcription, PDF text, limits, a crash mid-download) does not depend on the
 * platform and is tested end to end on Telegram (test/e2e/media-telegram.test.ts) and in
 * test/media/.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import type { InboundAttachment, RemoteFile } from "../../../channels/types.ts";
import { startHarness } from "./harness.ts";

setDefaultTimeout(5000);

const harness = await startHarness();
afterAll(() => harness.close());
const { emulator, adapter } = harness;
const alice = emulator.createUser("alice");

async function bytesOf(file: RemoteFile): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of file.body) chunks.push(chunk);
  return new Uint8Array(Buffer.concat(chunks));
}

async function attachmentsOf(files: Parameters<typeof emulator.sendDm>[2]): Promise<InboundAttachment[]> {
  const sent = emulator.sendDm(alice.id, "", files);
  const inbound = await harness.nextInbound((m) => m.updateKey === sent.id);
  return inbound.attachments;
}

test("a photo, a voice message and a PDF: kind from the content type, Discord's size and length; the bytes fetched once", async () => {
  const photo = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
  const voice = new Uint8Array(6_500).fill(7);
  const pdf = new TextEncoder().encode("%PDF-1.4 a tiny pdf");
  const attachments = await attachmentsOf({
    files: [
      { fileId: "dc-photo", filename: "photo.jpg", bytes: photo, contentType: "image/jpeg" },
      {
        fileId: "dc-voice",
        filename: "voice-message.ogg",
        bytes: voice,
        contentType: "audio/ogg",
        durationSecs: 3,
      },
      { fileId: "dc-pdf", filename: "figures.pdf", bytes: pdf, contentType: "application/pdf" },
    ],
  });
  expect(attachments).toEqual([
    {
      kind: "photo",
      ref: expect.stringMatching(/\/attachments\/\d+\/photo\.jpg$/),
      name: "photo.jpg",
      sizeBytes: photo.byteLength,
      mediaType: "image/jpeg",
    },
    {
      kind: "audio",
      ref: expect.stringMatching(/\/attachments\/\d+\/voice-message\.ogg$/),
      name: "voice-message.ogg",
      sizeBytes: voice.byteLength,
      mediaType: "audio/ogg",
      durationSeconds: 3,
    },
    {
      kind: "file",
      ref: expect.stringMatching(/\/attachments\/\d+\/figures\.pdf$/),
      name: "figures.pdf",
      sizeBytes: pdf.byteLength,
      mediaType: "application/pdf",
    },
  ]);

  for (const [attachment, bytes, fileId] of [
    [attachments[0]!, photo, "dc-photo"],
    [attachments[1]!, voice, "dc-voice"],
    [attachments[2]!, pdf, "dc-pdf"],
  ] as const) {
    const file = await adapter.openFile(attachment.ref, new AbortController().signal);
    expect(await bytesOf(file)).toEqual(bytes);
    expect(emulator.files.downloads(fileId)).toEqual({ started: 1, completed: 1 });
  }
});

test("an attachment states its size as Discord does, so a file over the limit is known before any download", async () => {
  const [huge] = await attachmentsOf({
    files: [
      {
        fileId: "dc-huge",
        filename: "huge.bin",
        bytes: new Uint8Array(1000),
        size: 30 * 1024 * 1024,
        contentType: "application/octet-stream",
      },
    ],
  });
  expect(huge).toMatchObject({ kind: "file", name: "huge.bin", sizeBytes: 30 * 1024 * 1024 });
  expect(emulator.files.downloads("dc-huge").started).toBe(0);
});
