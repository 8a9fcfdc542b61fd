/**
 * Media end to end through a real gateway process, the Slack emulator (files on a `file_share`
 * message, served at their url_private to the bot token only) and the fake model server (chat
 * completions and audio transcriptions).
 */
import { expect, test } from "bun:test";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { slackGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import {
  expectDownloadCrashAnsweredOnce,
  expectScaledImage,
  largeJpeg,
  oggOpus,
  onePagePdf,
  userParts,
} from "./support/media.ts";

const fixture = useE2eFixture("switchboard-e2e-media-slack-", startSlackEmulator);
const { llm, platform: slack } = fixture;
const [ALICE, BOB, CAROL, DAN, ERIN] = ["U0ALICE", "U0BOB", "U0CAROL", "U0DAN", "U0ERIN"];

const gateway = fixture.gatewayAroundTests(() =>
  slackGatewayEnv(fixture, {
    allowed: [ALICE, BOB, CAROL, DAN, ERIN],
    extra: { SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1" },
  }),
);

const dmChannel = (user: string) => `D${user.slice(1)}`;
const botReply = (user: string, text: string) =>
  slack.waitFor(
    () =>
      slack
        .messages(dmChannel(user))
        .find((m) => m.user === slack.identity.botUserId && m.text.includes(text)),
    30_000,
    `a bot reply containing "${text}"`,
  );

test("a photo reaches the model as an image part whose bytes are the scaled original", async () => {
  const original = await largeJpeg(90);
  const file = slack.hostFile({ id: "F0PHOTO", name: "photo.jpg", mimetype: "image/jpeg", bytes: original });
  slack.pushEvent(slack.events.dm({ user: ALICE, text: "what colour is this slack photo", files: [file] }));
  await botReply(ALICE, "echo:");
  await expectScaledImage(userParts(llm.requests(), "what colour is this slack photo"), original);
  expect(slack.files.downloads("F0PHOTO")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("an audio clip goes through the transcription server and its transcript is in the prompt", async () => {
  llm.setTranscription({ text: "move the standup to ten on slack" });
  const voice = oggOpus(7_500);
  const file = slack.hostFile({
    id: "F0VOICE",
    name: "audio_message.ogg",
    mimetype: "audio/ogg",
    bytes: voice,
    durationMs: 4_000,
  });
  slack.pushEvent(slack.events.dm({ user: BOB, text: "", files: [file] }));
  await botReply(BOB, "echo:");
  const heard = llm.transcriptions().find((t) => t.bytes.byteLength === voice.byteLength);
  expect(heard?.bytes).toEqual(voice);
  const prompt = llm.requests().find((r) => r.lastUserText.includes("move the standup to ten on slack"));
  expect(prompt?.lastUserText).toContain("[voice transcript of audio_message.ogg");
}, 60_000);

test("a PDF for a model without file input: its text reaches the model, fetched once", async () => {
  const file = slack.hostFile({
    id: "F0PDF",
    name: "minutes.pdf",
    mimetype: "application/pdf",
    bytes: onePagePdf("meeting minutes approved"),
  });
  slack.pushEvent(slack.events.dm({ user: CAROL, text: "summarise the slack pdf", files: [file] }));
  await botReply(CAROL, "summarise the slack pdf");
  const prompt = llm.requests().find((r) => r.lastUserText.includes("summarise the slack pdf"));
  expect(prompt?.lastUserText).toContain("meeting minutes approved");
  expect(prompt?.lastUserText).not.toContain("cannot read");
  expect(slack.files.downloads("F0PDF")).toEqual({ started: 1, completed: 1 });
}, 60_000);

test("a file over the limit is refused before any download, and the user is told the limit", async () => {
  const file = slack.hostFile({
    id: "F0HUGE",
    name: "huge.bin",
    mimetype: "application/octet-stream",
    bytes: new Uint8Array(1000),
    size: 30 * 1024 * 1024,
  });
  slack.pushEvent(slack.events.dm({ user: DAN, text: "read this huge slack file", files: [file] }));
  const reply = await botReply(DAN, "limit per file");
  expect(reply.text).toContain('"huge.bin" is larger than the 20 MB limit per file');
  expect(slack.files.downloads("F0HUGE").started).toBe(0);
}, 60_000);

test("SIGKILL during a url_private download: after the restart the file is fetched again and answered once", async () => {
  await expectDownloadCrashAnsweredOnce({
    llm,
    send(file, caption) {
      const hosted = slack.hostFile({ id: "F0SLOW", mimetype: "text/plain", ...file });
      slack.pushEvent(slack.events.dm({ user: ERIN, text: caption, files: [hosted] }));
    },
    downloads: () => slack.files.downloads("F0SLOW"),
    crashAndRestart: () => gateway.crashAndRestart(),
    botTexts: () =>
      slack
        .messages(dmChannel(ERIN))
        .filter((m) => m.user === slack.identity.botUserId)
        .map((m) => m.text),
  });
}, 120_000);
