import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import { telegramFileMethod, uploadFilename } from "../../../channels/telegram/send-file.ts";
import type { OutgoingFile } from "../../../channels/types.ts";
import { isFormattingRejection } from "../../../outbox/render.ts";
import { isSwitchboardError } from "../../../src/errors.ts";
import {
  privateChat,
  startTelegramEmulator,
  supergroupChat,
  type TelegramEmulator,
  user,
} from "../../emulators/telegram/index.ts";

const alice = user(1001, "Alice");
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const OGG = new TextEncoder().encode("OggS\u0000\u0002 pretend opus");
const PDF = new TextEncoder().encode("%PDF-1.7\n% a tiny pdf");

let emulator: TelegramEmulator;
let adapter: TelegramAdapter;

beforeEach(() => {
  emulator = startTelegramEmulator();
  emulator.addChat(privateChat(alice));
  adapter = new TelegramAdapter({
    mode: "polling",
    token: emulator.token,
    apiRoot: emulator.url,
    requestTimeoutMs: 2_000,
  });
});

afterEach(async () => {
  await emulator.close();
});

function file(bytes: Uint8Array, mimeType: string, extra: Partial<OutgoingFile> = {}): OutgoingFile {
  return {
    bytes,
    filename: "f",
    mimeType,
    caption: "",
    format: "plain",
    idempotencyKey: "obx_1#0",
    ...extra,
  };
}

async function failureOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

describe("Telegram files out", () => {
  test("the method follows the sniffed type: photos, Opus voice notes, everything else a document", () => {
    expect(telegramFileMethod("image/jpeg")).toBe("sendPhoto");
    expect(telegramFileMethod("image/webp")).toBe("sendPhoto");
    expect(telegramFileMethod("image/gif")).toBe("sendDocument");
    expect(telegramFileMethod("audio/ogg; codecs=opus")).toBe("sendVoice");
    expect(telegramFileMethod("audio/ogg")).toBe("sendVoice");
    expect(telegramFileMethod("audio/mpeg")).toBe("sendDocument");
    expect(telegramFileMethod("application/x-msdownload")).toBe("sendDocument");
  });

  test("upload names keep letters, digits, dots and dashes; nothing can break the multipart header", () => {
    expect(uploadFilename("report 2026.pdf")).toBe("report_2026.pdf");
    expect(uploadFilename('a"b\r\nc.txt')).toBe("a_b_c.txt");
    expect(uploadFilename("Отчёт.pdf")).toBe("Отчёт.pdf");
    expect(uploadFilename("..")).toBe("file");
  });

  test("a photo with an HTML caption, replying to the question, arrives with the uploaded bytes", async () => {
    const question = emulator.incoming({ chat: privateChat(alice), from: alice, text: "chart?" }).message;
    const receipt = await adapter.files!.send(
      "1001",
      file(PNG, "image/png", {
        filename: "chart.png",
        caption: "<b>the</b> chart",
        format: "rich",
        replyTo: String(question.message_id),
      }),
    );
    const sent = emulator.messages(1001).at(-1)!;
    expect(receipt).toEqual({ messageIds: [String(sent.messageId)] });
    expect(sent.file?.method).toBe("sendPhoto");
    expect(sent.file?.filename).toBe("chart.png");
    expect([...sent.file!.bytes]).toEqual([...PNG]);
    expect(sent.visibleText).toBe("the chart");
    expect(sent.replyToMessageId).toBe(question.message_id);
  });

  test("a voice note and a document, without captions, into a forum topic", async () => {
    const group = supergroupChat(-100500, "Team", { isForum: true });
    emulator.addChat(group);
    emulator.addTopic(-100500, 7, "ops");
    await adapter.files!.send("-100500:7", file(OGG, "audio/ogg; codecs=opus", { filename: "note.ogg" }));
    await adapter.files!.send("-100500:7", file(PDF, "application/pdf", { filename: "report.pdf" }));
    const [voice, doc] = emulator.messages(-100500);
    expect(voice?.file?.method).toBe("sendVoice");
    expect(doc?.file?.method).toBe("sendDocument");
    expect(doc?.file?.filename).toBe("report.pdf");
    expect(doc?.threadId).toBe(7);
    expect(emulator.callsOf("sendDocument")[0]?.params.caption).toBeUndefined();
  });

  test("a refused upload is platform_rejected with Telegram's reason; a bad caption is a markup rejection", async () => {
    const big = new Uint8Array(10 * 1024 * 1024 + 1);
    big.set(PNG);
    const tooBig = await failureOf(adapter.files!.send("1001", file(big, "image/png")));
    expect(tooBig.code).toBe("platform_rejected");
    expect(tooBig.retryable).toBe(false);
    expect(tooBig.message).toMatch(/sendPhoto \(413\): Request Entity Too Large/);
    const markup = await failureOf(
      adapter.files!.send("1001", file(PNG, "image/png", { caption: "<b>open", format: "rich" })),
    );
    expect(isFormattingRejection(markup)).toBe(true);
    expect(emulator.messages(1001)).toEqual([]);
  });

  test("a 500 on upload is retryable; its limits are Telegram's", async () => {
    emulator.injectFault("sendDocument", { kind: "server_error" });
    const failure = await failureOf(adapter.files!.send("1001", file(PDF, "application/pdf")));
    expect(failure.code).toBe("platform_unavailable");
    expect(failure.retryable).toBe(true);
    expect(adapter.files?.limits).toEqual({
      maxFileBytes: 50 * 1024 * 1024,
      maxPhotoBytes: 10 * 1024 * 1024,
      maxCaptionChars: 1024,
    });
  });
});
