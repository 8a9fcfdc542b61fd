/**
 * Media end to end through a real gateway process, the Telegram emulator (getFile and file
 * downloads) and the fake model server (chat completions and audio transcriptions). What happens
 * to a file does not depend on the platform, so this is the one end-to-end media file; how
 * Discord and Slack describe and serve attachments is tested in process in
 * test/channels/{discord,slack}/attachments.test.ts.
 */
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { scaleForModel } from "../../src/media/image.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";
import { expectDownloadCrashAnsweredOnce, oggOpus, onePagePdf, userParts } from "./support/media.ts";

const fixture = useE2eFixture("switchboard-e2e-media-", startTelegramEmulator);
const { llm, platform: telegram } = fixture;

function env(
  dbFile: string,
  extra: Record<string, string> = {},
  allowed: number[] = [],
): Record<string, string> {
  return telegramGatewayEnv(fixture, {
    allowed,
    dbFile,
    extra: { SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1", ...extra },
  });
}

let shared: GatewayProcess | null = null;
const people = [
  user(2001, "Photo"),
  user(2002, "Voice"),
  user(2003, "Big"),
  user(2004, "Broken"),
  user(2005, "Long"),
  user(2006, "Pdf"),
];
async function sharedGateway(): Promise<GatewayProcess> {
  shared ??= await fixture.startGateway(
    env(
      "shared.sqlite",
      {},
      people.map((p) => p.id),
    ),
    GATEWAY_START_TIMEOUT_MS,
  );
  return shared;
}

test("a photo reaches the model as an image part whose bytes are the scaled original", async () => {
  await sharedGateway();
  const alice = people[0]!;
  const original = await sharp({
    create: { width: 3000, height: 1800, channels: 3, background: { r: 200, g: 60, b: 30 } },
  })
    .jpeg()
    .toBuffer();
  telegram.files.add("photo-a-2", new Uint8Array(original));
  telegram.incoming({
    chat: privateChat(alice),
    from: alice,
    caption: "what colour is this photo",
    media: {
      kind: "photo",
      fileId: "photo-a",
      sizes: [
        { width: 90, height: 54, fileSize: 900 },
        { width: 320, height: 192, fileSize: 9_000 },
        { width: 3000, height: 1800, fileSize: original.byteLength },
      ],
    },
  });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("echo:"), 30_000);
  const parts = userParts(llm.requests(), "what colour is this photo");
  const image = parts.find((p) => p.type === "image_url") as { image_url: { url: string } } | undefined;
  expect(image).toBeDefined();
  const [prefix, data] = image!.image_url.url.split(",");
  expect(prefix).toBe("data:image/jpeg;base64");
  const sent = new Uint8Array(Buffer.from(data!, "base64"));
  const expected = await scaleForModel(new Uint8Array(original));
  expect(sent).toEqual(new Uint8Array(expected.bytes));
  const meta = await sharp(sent).metadata();
  expect([meta.width, meta.height]).toEqual([2048, 1229]);
  expect(telegram.files.downloads("photo-a-2")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("a PDF for a model without file input: its text reaches the model, fetched once", async () => {
  await sharedGateway();
  const carol = people[5]!;
  const pdf = onePagePdf("quarterly figures rose");
  telegram.files.add("pdf-c", pdf);
  telegram.incoming({
    chat: privateChat(carol),
    from: carol,
    caption: "summarise the pdf",
    media: {
      kind: "document",
      fileId: "pdf-c",
      fileName: "figures.pdf",
      mimeType: "application/pdf",
      fileSize: pdf.byteLength,
    },
  });
  await telegram.waitForMessage(
    carol.id,
    (m) => m.fromBot && m.visibleText.includes("summarise the pdf"),
    30_000,
  );
  const prompt = llm.requests().find((r) => r.lastUserText.includes("summarise the pdf"));
  expect(prompt?.lastUserText).toContain("quarterly figures rose");
  expect(prompt?.lastUserText).not.toContain("cannot read");
  expect(telegram.files.downloads("pdf-c")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("a voice note goes through the transcription server and its transcript is in the prompt", async () => {
  await sharedGateway();
  const bob = people[1]!;
  llm.setTranscription({ text: "remind me to water the plants" });
  const voice = oggOpus(6_000);
  telegram.files.add("voice-b", voice);
  telegram.incoming({
    chat: privateChat(bob),
    from: bob,
    media: { kind: "voice", fileId: "voice-b", durationSeconds: 2, fileSize: voice.byteLength },
  });
  await telegram.waitForMessage(bob.id, (m) => m.fromBot && m.visibleText.includes("echo:"), 30_000);
  const heard = llm.transcriptions().find((t) => t.bytes.byteLength === voice.byteLength);
  expect(heard?.model).toBe("whisper-1");
  expect(heard?.bytes).toEqual(voice);
  const prompt = llm.requests().find((r) => r.lastUserText.includes("remind me to water the plants"));
  expect(prompt?.lastUserText).toContain("[voice transcript of");
}, 60_000);

test("a voice note longer than the transcription limit gets a note, and no transcription request", async () => {
  await sharedGateway();
  const fay = people[4]!;
  const voice = oggOpus(7_000);
  telegram.files.add("voice-long-f", voice);
  const heardBefore = llm.transcriptions().length;
  telegram.incoming({
    chat: privateChat(fay),
    from: fay,
    media: { kind: "voice", fileId: "voice-long-f", durationSeconds: 12 * 60, fileSize: voice.byteLength },
  });
  const reply = await telegram.waitForMessage(
    fay.id,
    (m) => m.fromBot && m.visibleText.includes("limit for transcription"),
    30_000,
  );
  expect(reply.visibleText).toContain(
    "The voice note is 12 min long, over the 10 min limit for transcription",
  );
  const prompt = llm
    .requests()
    .find((r) => r.lastUserText.includes("longer than the 10 min transcription limit"));
  expect(prompt).toBeDefined();
  expect(llm.transcriptions().slice(heardBefore)).toEqual([]);
}, 60_000);

test("a file over the limit is refused before any download, and the user is told the limit", async () => {
  await sharedGateway();
  const carol = people[2]!;
  telegram.files.add("big-c", new Uint8Array(1000));
  telegram.incoming({
    chat: privateChat(carol),
    from: carol,
    caption: "read this huge file",
    media: {
      kind: "document",
      fileId: "big-c",
      fileName: "huge.bin",
      mimeType: "application/octet-stream",
      fileSize: 30 * 1024 * 1024,
    },
  });
  const reply = await telegram.waitForMessage(
    carol.id,
    (m) => m.fromBot && m.visibleText.includes("limit per file"),
    30_000,
  );
  expect(reply.visibleText).toContain('"huge.bin" is larger than the 20 MB limit per file');
  expect(telegram.callsOf("getFile").filter((c) => c.params.file_id === "big-c")).toEqual([]);
  expect(telegram.files.downloads("big-c").started).toBe(0);
  const prompt = llm.requests().find((r) => r.lastUserText.includes("read this huge file"));
  expect(prompt?.lastUserText).toContain("larger than the 20 MB limit");
}, 60_000);

test("a download answering 404 is not retried; the model and the user are told it could not be fetched", async () => {
  await sharedGateway();
  const dan = people[3]!;
  telegram.files.add("gone-d", new Uint8Array(500), { status: 404 });
  telegram.incoming({
    chat: privateChat(dan),
    from: dan,
    caption: "here is my notes file",
    media: {
      kind: "document",
      fileId: "gone-d",
      fileName: "notes.txt",
      mimeType: "text/plain",
      fileSize: 500,
    },
  });
  const reply = await telegram.waitForMessage(
    dan.id,
    (m) => m.fromBot && m.visibleText.includes("could not be fetched"),
    30_000,
  );
  expect(reply.visibleText).toContain(
    '"notes.txt" could not be fetched (Telegram file download answered HTTP 404)',
  );
  expect(telegram.files.downloads("gone-d").started).toBe(1);
}, 60_000);

test("SIGKILL during a download: after the restart the file is fetched again and answered once", async () => {
  const erin = user(2010, "Erin");
  const start = () => fixture.startGateway(env("crash.sqlite", {}, [erin.id]), GATEWAY_START_TIMEOUT_MS);
  let gateway = await start();
  await expectDownloadCrashAnsweredOnce({
    llm,
    send(file, caption) {
      telegram.files.add("slow-e", file.bytes, file.fault);
      telegram.incoming({
        chat: privateChat(erin),
        from: erin,
        caption,
        media: {
          kind: "document",
          fileId: "slow-e",
          fileName: file.name,
          mimeType: "text/plain",
          fileSize: file.bytes.byteLength,
        },
      });
    },
    downloads: () => telegram.files.downloads("slow-e"),
    async crashAndRestart() {
      await gateway.kill("SIGKILL");
      gateway = await start();
    },
    botTexts: () =>
      telegram
        .messages(erin.id)
        .filter((m) => m.fromBot)
        .map((m) => m.visibleText),
  });
}, 120_000);

/** Blob files under `dir` (temp files of puts under way excluded). */
function blobFiles(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) =>
      /^[0-9a-f]{2}[/\\][0-9a-f]{64}$/.test(name),
    );
  } catch {
    return [];
  }
}

test("/new and /forget remove the conversation's files, each photo kept as sent and scaled", async () => {
  const gil = user(2020, "Gil");
  const hal = user(2021, "Hal");
  const blobDir = join(fixture.dir.path, "cleanup-blobs");
  await fixture.startGateway(
    env("cleanup.sqlite", { SWITCHBOARD_BLOB_DIR: blobDir }, [gil.id, hal.id]),
    GATEWAY_START_TIMEOUT_MS,
  );
  const photo = async (colour: number) =>
    new Uint8Array(
      await sharp({ create: { width: 900, height: 600, channels: 3, background: { r: colour, g: 9, b: 9 } } })
        .jpeg()
        .toBuffer(),
    );
  const send = async (who: typeof gil, fileId: string, bytes: Uint8Array) => {
    // The emulator names each size of a photo `<fileId>-<index>`.
    telegram.files.add(`${fileId}-0`, bytes);
    telegram.incoming({
      chat: privateChat(who),
      from: who,
      caption: `look at ${fileId}`,
      media: { kind: "photo", fileId, sizes: [{ width: 900, height: 600, fileSize: bytes.byteLength }] },
    });
    await telegram.waitForMessage(
      who.id,
      (m) => m.fromBot && m.visibleText.includes(`look at ${fileId}`),
      30_000,
    );
  };
  const say = async (who: typeof gil, text: string, expected: string) => {
    telegram.incoming({ chat: privateChat(who), from: who, text });
    await telegram.waitForMessage(who.id, (m) => m.fromBot && m.visibleText.includes(expected), 30_000);
  };

  await send(gil, "gil-photo", await photo(10));
  await send(hal, "hal-photo", await photo(200));
  // Each photo is kept twice: as sent, and scaled for the model.
  expect(blobFiles(blobDir)).toHaveLength(4);

  await say(gil, "/new", "Started a new conversation");
  await eventually(() => blobFiles(blobDir).length === 2, 10_000, "Gil's files to be removed after /new");

  await say(hal, "/forget", "Send /forget confirm");
  await say(hal, "/forget confirm", "Done: I deleted this conversation");
  await eventually(() => blobFiles(blobDir).length === 0, 10_000, "Hal's files to be removed after /forget");
}, 90_000);
