import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import type { OutgoingFile } from "../../../channels/types.ts";
import { type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger } from "./helpers.ts";

let emulator: SlackEmulator;
let adapter: SlackAdapter;

beforeAll(async () => {
  emulator = startSlackEmulator();
  adapter = createSlackAdapter(
    {
      mode: "http",
      botToken: emulator.botToken,
      signingSecret: "unused-in-these-tests",
      apiUrl: emulator.apiUrl,
      requestTimeoutMs: 2_000,
    },
    { logger: recordingLogger() },
  );
  await adapter.start(recordingIngress());
});

afterAll(async () => {
  await adapter.stop();
  await emulator.close();
});

const PDF = new TextEncoder().encode("%PDF-1.7\n% tiny\n");

function file(extra: Partial<OutgoingFile> = {}): OutgoingFile {
  return {
    bytes: PDF,
    filename: "report.pdf",
    mimeType: "application/pdf",
    caption: "",
    format: "rich",
    idempotencyKey: "obx_s1#0",
    ...extra,
  };
}

describe("Slack adapter: files through the external upload flow", () => {
  test("announce, upload the bytes, complete into the thread with the caption as initial comment", async () => {
    const receipt = await adapter.files!.send(
      "C0SLACK01:1700000000.000100",
      file({ caption: "the *report*" }),
    );
    const shared = emulator.messages("C0SLACK01").find((m) => m.files !== undefined);
    expect(shared?.text).toBe("the *report*");
    expect(shared?.threadTs).toBe("1700000000.000100");
    expect(shared?.files?.map((f) => f.filename)).toEqual(["report.pdf"]);
    expect([...shared!.files![0]!.bytes]).toEqual([...PDF]);
    expect(receipt.messageIds).toEqual([`file:${shared!.files![0]!.id}`]);
  });

  test("a Slack error on completion is mapped like any Web API error; its limits are Slack's", async () => {
    emulator.failNext("files.completeUploadExternal", { kind: "server_error", status: 500 });
    const failed = await adapter.files!.send("C0SLACK01", file()).then(
      () => null,
      (e: unknown) => e as { code: string; retryable: boolean },
    );
    expect(failed?.code).toBe("platform_unavailable");
    expect(failed?.retryable).toBe(true);
    expect(adapter.files?.limits.maxFileBytes).toBe(1024 * 1024 * 1024);
  });
});
