/**
 * Media end to end through a real gateway process, the Discord emulator (attachments on
 * MESSAGE_CREATE, served at their URL) and the fake model server (chat completions and audio
 * transcriptions).
 */
import { expect, test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import {
  expectDownloadCrashAnsweredOnce,
  expectScaledImage,
  largeJpeg,
  oggOpus,
  onePagePdf,
  userParts,
} from "./support/media.ts";

const fixture = useE2eFixture("switchboard-e2e-media-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");
const carol = discord.createUser("carol");
const dan = discord.createUser("dan");
const erin = discord.createUser("erin");

const gateway = fixture.gatewayAroundTests(() =>
  discordGatewayEnv(fixture, {
    allowed: [alice.id, bob.id, carol.id, dan.id, erin.id],
    extra: { SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1" },
  }),
);

const botReply = (userId: string, text: string) =>
  discord.waitFor(
    () =>
      discord
        .visibleMessages(discord.dmChannelId(userId))
        .find((m) => m.author.id === discord.bot.id && m.content.includes(text)),
    30_000,
    `a bot reply containing "${text}"`,
  );

test("a photo reaches the model as an image part whose bytes are the scaled original", async () => {
  const original = await largeJpeg(40);
  discord.sendDm(alice.id, "what colour is this discord photo", {
    files: [{ fileId: "dc-photo", filename: "photo.jpg", bytes: original, contentType: "image/jpeg" }],
  });
  await botReply(alice.id, "echo:");
  await expectScaledImage(userParts(llm.requests(), "what colour is this discord photo"), original);
  expect(discord.files.downloads("dc-photo")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("a voice message goes through the transcription server and its transcript is in the prompt", async () => {
  llm.setTranscription({ text: "book a table for two on discord" });
  const voice = oggOpus(6_500);
  discord.sendDm(bob.id, "", {
    files: [
      {
        fileId: "dc-voice",
        filename: "voice-message.ogg",
        bytes: voice,
        contentType: "audio/ogg",
        durationSecs: 3,
      },
    ],
  });
  await botReply(bob.id, "echo:");
  const heard = llm.transcriptions().find((t) => t.bytes.byteLength === voice.byteLength);
  expect(heard?.bytes).toEqual(voice);
  const prompt = llm.requests().find((r) => r.lastUserText.includes("book a table for two on discord"));
  expect(prompt?.lastUserText).toContain("[voice transcript of voice-message.ogg");
}, 60_000);

test("a PDF for a model without file input: its text reaches the model, fetched once", async () => {
  const pdf = onePagePdf("quarterly figures rose");
  discord.sendDm(carol.id, "summarise the discord pdf", {
    files: [{ fileId: "dc-pdf", filename: "figures.pdf", bytes: pdf, contentType: "application/pdf" }],
  });
  await botReply(carol.id, "summarise the discord pdf");
  const prompt = llm.requests().find((r) => r.lastUserText.includes("summarise the discord pdf"));
  expect(prompt?.lastUserText).toContain("quarterly figures rose");
  expect(prompt?.lastUserText).not.toContain("cannot read");
  expect(discord.files.downloads("dc-pdf")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("an attachment over the limit is refused before any download, and the user is told the limit", async () => {
  discord.sendDm(dan.id, "read this huge discord file", {
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
  const reply = await botReply(dan.id, "limit per file");
  expect(reply.content).toContain('"huge.bin" is larger than the 20 MB limit per file');
  expect(discord.files.downloads("dc-huge").started).toBe(0);
}, 60_000);

test("SIGKILL during an attachment download: after the restart it is fetched again and answered once", async () => {
  await expectDownloadCrashAnsweredOnce({
    llm,
    send(file, caption) {
      discord.sendDm(erin.id, caption, {
        files: [
          {
            fileId: "dc-slow",
            filename: file.name,
            bytes: file.bytes,
            fault: file.fault,
            contentType: "text/plain",
          },
        ],
      });
    },
    downloads: () => discord.files.downloads("dc-slow"),
    crashAndRestart: () => gateway.crashAndRestart(),
    botTexts: () =>
      discord
        .visibleMessages(discord.dmChannelId(erin.id))
        .filter((m) => m.author.id === discord.bot.id)
        .map((m) => m.content),
  });
}, 120_000);
