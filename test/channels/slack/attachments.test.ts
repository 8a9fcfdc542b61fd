/**
 * What the Slack adapter makes of a `file_share`, in process against the emulator (Socket Mode):
 * the kind from the mimetype, the size and an audio clip's length as Slack states them (so limits
 * apply before any download), and openFile fetching the url_private once, with the bot token.
 * What happens to the file next (scaling, transcription, PDF text, limits, a crash
 * mid-download) does not depend on the platform and is tested end to end on Telegram
 * (test/e2e/media-telegram.test.ts) and in test/media/.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import type { InboundAttachment, RemoteFile } from "../../../channels/types.ts";
import { type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger } from "./helpers.ts";

const user = "U0HUMAN007";
let emulator: SlackEmulator;
let adapter: SlackAdapter;
const ingress = recordingIngress();

beforeAll(async () => {
  emulator = startSlackEmulator();
  adapter = createSlackAdapter(
    { mode: "socket", botToken: emulator.botToken, appToken: emulator.appToken, apiUrl: emulator.apiUrl },
    { logger: recordingLogger() },
  );
  await adapter.start(ingress);
});

afterAll(async () => {
  await adapter.stop();
  await emulator.close();
});

async function bytesOf(file: RemoteFile): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of file.body) chunks.push(chunk);
  return new Uint8Array(Buffer.concat(chunks));
}

async function attachmentsOf(files: ReturnType<SlackEmulator["hostFile"]>[]): Promise<InboundAttachment[]> {
  const before = ingress.messages.length;
  emulator.pushEvent(emulator.events.dm({ user, text: "", files }));
  const message = await emulator.waitFor(
    () => ingress.messages[before],
    2000,
    "the file_share message at ingress",
  );
  return message.attachments;
}

test("a photo, an audio clip and a PDF: kind from the mimetype, Slack's size and length; url_private fetched once", async () => {
  const photo = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
  const audio = new Uint8Array(7_500).fill(7);
  const pdf = new TextEncoder().encode("%PDF-1.4 a tiny pdf");
  const attachments = await attachmentsOf([
    emulator.hostFile({ id: "F0PHOTO", name: "photo.jpg", mimetype: "image/jpeg", bytes: photo }),
    emulator.hostFile({
      id: "F0VOICE",
      name: "audio_message.ogg",
      mimetype: "audio/ogg",
      bytes: audio,
      durationMs: 4_000,
    }),
    emulator.hostFile({ id: "F0PDF", name: "minutes.pdf", mimetype: "application/pdf", bytes: pdf }),
  ]);
  expect(attachments).toEqual([
    expect.objectContaining({ kind: "photo", name: "photo.jpg", sizeBytes: photo.byteLength }),
    expect.objectContaining({
      kind: "audio",
      name: "audio_message.ogg",
      sizeBytes: audio.byteLength,
      durationSeconds: 4,
    }),
    expect.objectContaining({ kind: "file", name: "minutes.pdf", sizeBytes: pdf.byteLength }),
  ]);

  for (const [attachment, bytes, id] of [
    [attachments[0]!, photo, "F0PHOTO"],
    [attachments[1]!, audio, "F0VOICE"],
    [attachments[2]!, pdf, "F0PDF"],
  ] as const) {
    const file = await adapter.openFile(attachment.ref, new AbortController().signal);
    expect(await bytesOf(file)).toEqual(bytes);
    expect(emulator.files.downloads(id)).toEqual({ started: 1, completed: 1 });
  }
});

test("a file states its size as Slack does, so a file over the limit is known before any download", async () => {
  const [huge] = await attachmentsOf([
    emulator.hostFile({
      id: "F0HUGE",
      name: "huge.bin",
      mimetype: "application/octet-stream",
      bytes: new Uint8Array(1000),
      size: 30 * 1024 * 1024,
    }),
  ]);
  expect(huge).toMatchObject({ kind: "file", name: "huge.bin", sizeBytes: 30 * 1024 * 1024 });
  expect(emulator.files.downloads("F0HUGE").started).toBe(0);
});
