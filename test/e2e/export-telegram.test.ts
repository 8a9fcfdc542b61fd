/**
 * /export end to end on Telegram: the gateway composed in this process (no process is needed
 * here), grammY against the Telegram emulator and the fake model server. The conversation arrives once as a Markdown document (sendDocument)
 * whose bytes are the transcript; the same update delivered again sends nothing more; /forget
 * then removes the file from the blob store with the conversation.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { runCliJson } from "./support/cli.ts";
import { telegramDmSay, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-export-tg-", startTelegramEmulator);
const { platform: telegram } = fixture;
const alice = user(3001, "Alice");
const blobDir = join(fixture.dir.path, "blobs");
const env = () =>
  telegramGatewayEnv(fixture, {
    allowed: [alice.id],
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: { SWITCHBOARD_BLOB_DIR: blobDir },
  });

/** The blobs stored now (`<2 hex>/<sha256>` files). */
function blobFiles(): string[] {
  try {
    return readdirSync(blobDir, { recursive: true, encoding: "utf8" }).filter((name) =>
      /^[0-9a-f]{2}[/\\][0-9a-f]{64}$/.test(name),
    );
  } catch {
    return [];
  }
}
const say = telegramDmSay(telegram);

describe("/export on Telegram", () => {
  let running: InProcessGateway | undefined;
  beforeAll(async () => {
    running = await startInProcessGateway(env(), { clock: systemClock });
  });
  afterAll(() => running?.stop());

  test("sends the conversation once as a Markdown document; a redelivered /export sends nothing more; /forget removes the file", async () => {
    await say(alice, "the quince jam needs 40 minutes", "echo: the quince jam needs 40 minutes");
    await say(alice, "and the lid goes on hot", "echo: and the lid goes on hot");

    const sent = telegram.incoming({ chat: privateChat(alice), from: alice, text: "/export" });
    const document = await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.file?.method === "sendDocument",
      20_000,
    );
    expect(document.visibleText).toMatch(/^This conversation as Markdown: 4 messages, exported .* UTC\.$/);
    expect(document.file!.filename).toMatch(/^conversation-.+\.md$/);
    const markdown = new TextDecoder().decode(document.file!.bytes);
    expect(markdown).toStartWith("# Conversation ");
    const order = [
      "the quince jam needs 40 minutes",
      "echo: the quince jam needs 40 minutes",
      "and the lid goes on hot",
      "echo: and the lid goes on hot",
    ].map((text) => markdown.indexOf(text));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);

    telegram.deliverAgain(sent.update.update_id);
    await telegram.waitForConfirmed(sent.update.update_id, 20_000);
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    const files = telegram.messages(alice.id).filter((m) => m.fromBot && m.file);
    expect(files).toHaveLength(1);
    expect(telegram.callsOf("sendDocument")).toHaveLength(1);
    const records = await runCliJson<OutboxRecord[]>(["outbox", "list"], {
      SWITCHBOARD_DB: env().SWITCHBOARD_DB!,
    });
    const exports = records.filter((r) => r.kind === "message" && r.media !== null);
    expect(exports.map((r) => [r.state, r.kind === "message" ? r.media?.mimeType : null])).toEqual([
      ["delivered", "text/markdown"],
    ]);
    const blobId = exports[0]!.kind === "message" ? exports[0]!.media!.blobId : "";
    expect(blobFiles()).toEqual([join(blobId.slice(0, 2), blobId)]);

    // The export holds the conversation's text: /forget removes it with the conversation.
    await say(alice, "/forget confirm", "Done: I deleted this conversation");
    await eventually(() => blobFiles().length === 0, 10_000, "the export's blob to be removed after /forget");
  }, 60_000);
});
