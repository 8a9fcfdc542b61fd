import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { OutgoingFile } from "../../../channels/types.ts";
import { isSwitchboardError, type SwitchboardError } from "../../../src/errors.ts";
import { type Harness, startHarness } from "./harness.ts";

setDefaultTimeout(5000);

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ config: { requestTimeoutMs: 2_000 }, start: false });
});
afterAll(() => harness.close());

const general = () => `dc:${harness.emulator.generalChannelId}`;
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

function file(idempotencyKey: string, extra: Partial<OutgoingFile> = {}): OutgoingFile {
  return {
    bytes: PNG,
    filename: "chart.png",
    mimeType: "image/png",
    caption: "",
    format: "rich",
    idempotencyKey,
    ...extra,
  };
}

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

describe("Discord adapter: files as multipart attachments", () => {
  test("the file arrives as an attachment with its bytes, the caption as content, replying", async () => {
    const { emulator, adapter } = harness;
    const user = emulator.createUser("mira");
    const question = emulator.sendChannelMessage(emulator.generalChannelId, user.id, "chart?");
    const sent = await adapter.files!.send(
      general(),
      file("obx_f1#0", { caption: "**the** chart", replyTo: question.id }),
    );
    const stored = emulator.message(sent.messageIds[0]!);
    expect(stored?.message.content).toBe("**the** chart");
    expect(stored?.message.attachments).toMatchObject([
      { filename: "chart.png", size: PNG.length, content_type: "image/png" },
    ]);
    expect([...stored!.uploads![0]!.bytes]).toEqual([...PNG]);
    expect(stored?.message.message_reference?.message_id).toBe(question.id);
  });

  test("an upload whose answer was lost is retried under the same nonce and shows once", async () => {
    const { emulator, adapter } = harness;
    emulator.failNext("POST /channels/:id/messages", { kind: "reset", afterCommit: true });
    const lost = await failure(adapter.files!.send(general(), file("obx_f2#0", { filename: "once.png" })));
    expect(lost.retryable).toBe(true);
    const retried = await adapter.files!.send(general(), file("obx_f2#0", { filename: "once.png" }));
    const shown = emulator
      .visibleMessages(emulator.generalChannelId)
      .filter((m) => m.attachments.some((a) => a.filename === "once.png"));
    expect(shown.map((m) => m.id)).toEqual(retried.messageIds);
  });

  test("a file over Discord's 10 MiB upload limit is refused with its reason, not retryable", async () => {
    const { adapter } = harness;
    const big = new Uint8Array(10 * 1024 * 1024 + 1);
    const refused = await failure(adapter.files!.send(general(), file("obx_f3#0", { bytes: big })));
    expect(refused.code).toBe("platform_rejected");
    expect(refused.retryable).toBe(false);
    expect(adapter.files?.limits).toEqual({ maxFileBytes: 10 * 1024 * 1024, maxCaptionChars: 2000 });
  });
});
