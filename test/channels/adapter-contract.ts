/**
 * The contract every ChannelAdapter must honour, run against the real adapter and its platform's
 * emulator in process: `runAdapterContract({ name, start })`. Cases that need a capability run
 * only where the adapter declares it (the optional method, `files`, `routes`, `idempotentSend`),
 * or where the platform side says the platform has the feature (threads, replies, acks); never
 * by channel name.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelAdapter,
  type InboundMessage,
  type IngressOutcome,
  inboundMessageSchema,
  type OutgoingFile,
  type OutgoingMessage,
  type ReplyStatus,
} from "../../channels/types.ts";
import { mediaRefusal } from "../../outbox/media.ts";
import { createRetryPolicy } from "../../outbox/retry-policy.ts";
import { createDeliveryWorker } from "../../outbox/worker.ts";
import { isSwitchboardError, type SwitchboardError } from "../../src/errors.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { systemClock } from "../../src/util/clock.ts";
import { silentLogger } from "../../src/util/log.ts";
import { OutboxDb } from "../outbox/support/outbox-db.ts";
import { messageInsert } from "../outbox/support/records.ts";

/** A message the bot has in a chat, as a member of the chat sees it now. */
export interface ShownMessage {
  /** The ids a send receipt may name for this message (Slack names a shared file `file:<id>`). */
  receiptIds: string[];
  /** The text (or a file's caption) as shown, markup applied. */
  text: string;
  /** The platform id of the message this one replies to, if it is shown as a reply. */
  replyTo?: string;
  /** Buttons under it, by row, with the data a press sends back. */
  buttons?: Array<Array<{ label: string; data: string }>>;
  files?: Array<{ name: string; bytes: Uint8Array }>;
}

/** What the suite makes a platform's next call fail with; each side maps it to its emulator's fault. */
export type ContractFault =
  /** 429 with a retry-after of 7 s. */
  | "rate_limited"
  /** A 5xx from the platform. */
  | "unavailable"
  /** A refusal a retry would not change (a 4xx; Slack answers `ok: false`): the bot was blocked, the chat is gone. */
  | "rejected"
  /** The platform acts on the request, and its answer never arrives. */
  | "answer_lost";

/** The platform's side of a message a user wrote: what the side needs to tell whether it was acknowledged. */
export interface Written {
  /** The platform's id of the message. */
  messageId: string;
  /** The side's own handle on the delivery (an update id, an envelope id, a request log). */
  delivery: unknown;
}

/** The emulator, driven and read the way the contract needs, in the platform's own terms. */
export interface PlatformSide {
  /** The user who writes and presses, by the id the adapter reports as `principal.id`. */
  readonly userId: string;
  /** The reply target of that user's direct chat with the bot. */
  readonly dmTarget: string;
  /** A reply target inside a thread (a forum topic, a thread), where the platform has threads. */
  readonly threadTarget?: string;
  /** The platform shows `replyTo` as a reply to that message (absent where only threads exist). */
  readonly showsReplies: boolean;
  /** The largest uploads the platform itself takes from a bot. */
  readonly uploadLimits?: { maxFileBytes: number; maxPhotoBytes?: number };
  /** The user writes `text` in their direct chat; the platform delivers it to the adapter. */
  write(text: string): Promise<Written>;
  /** The bot's messages in `target`, oldest first. */
  shown(target: string): ShownMessage[];
  /** The user presses a button under the bot's message, or sends a press no button carries. */
  press(target: string, messageId: string, button: { label: string } | { forgedData: string }): Promise<void>;
  /** Texts shown to the user alone in answer to their presses, in order. */
  notices(): string[];
  /**
   * Sends a press to the adapter's route without the platform's signature; resolves with the HTTP
   * status. Required where the adapter serves routes (the platform signs what it posts there).
   */
  pressUnsigned?(target: string, messageId: string, label: string): Promise<number>;
  /** The next call `operation` makes answers with `fault`. */
  fail(operation: "send" | "upload", fault: ContractFault): void;
  /**
   * Whether the platform holds `written` as acknowledged (offset confirmed, 2xx answered, envelope
   * acked). Absent where the platform has no acknowledgement (Discord's gateway): there, a refused
   * ingress is retried by the adapter itself.
   */
  acknowledged?(written: Written): boolean;
  /** How many upload calls reached the platform (to show that a refused file was never sent). */
  uploadCalls(): number;
  /** The bot's own reactions on message `messageId` in `target` now. Required where the adapter has `react`. */
  reactions?(target: string, messageId: string): string[];
}

export interface ContractHarness {
  /** Not started: the suite starts it with its own ingress. */
  adapter: ChannelAdapter;
  platform: PlatformSide;
  /** Closes the emulator and anything the harness served; the suite has stopped the adapter. */
  close(): Promise<void>;
}

export interface AdapterContractOptions {
  name: string;
  start(): Promise<ContractHarness>;
  /**
   * `all` (default), or `receive`: only the receiving cases, for an adapter's second way of
   * receiving (a webhook beside long polling) whose sending is covered by the first run.
   */
  cases?: "all" | "receive";
}

const PDF = new TextEncoder().encode("%PDF-1.7\n% a tiny pdf for the contract\n");
const WAIT_MS = 5_000;
const CASE_TIMEOUT_MS = 15_000;

/** An ingress that records every call and lets each case decide the outcome (admitted by default). */
function contractIngress() {
  const calls: InboundMessage[] = [];
  let decide: (message: InboundMessage) => IngressOutcome | Promise<IngressOutcome> = (message) => ({
    kind: "admitted",
    runId: `run_${message.updateKey}`,
    conversationId: message.conversationKey,
  });
  const ingress = async (message: InboundMessage): Promise<IngressOutcome> => {
    calls.push(message);
    return await decide(message);
  };
  return Object.assign(ingress, {
    calls,
    decide(next: typeof decide) {
      decide = next;
    },
  });
}

async function waitUntil<T>(
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(`Timed out after ${WAIT_MS} ms waiting for ${what}`);
    await Bun.sleep(5);
  }
}

async function failureOf(promise: Promise<unknown>): Promise<SwitchboardError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

let sends = 0;

/** A fresh idempotency key per call: Discord's nonce would merge two sends under one key. */
function freshKey(): string {
  sends += 1;
  return `obx_contract_${sends}#0`;
}

function out(text: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { text, format: "plain", idempotencyKey: freshKey(), ...extra };
}

function pdf(caption: string): OutgoingFile {
  return {
    bytes: PDF,
    filename: "report.pdf",
    mimeType: "application/pdf",
    caption,
    format: "plain",
    idempotencyKey: freshKey(),
  };
}

function lastShown(platform: PlatformSide, target: string): ShownMessage {
  const shown = platform.shown(target).at(-1);
  if (!shown) throw new Error(`the bot has no message in ${target}`);
  return shown;
}

/**
 * Registers the contract's cases for one adapter. Builds one harness first (not started) to read
 * what the adapter and its platform declare, so a case that does not apply is reported as skipped.
 * Call it with `await` at the top of a test file.
 */
export async function runAdapterContract(options: AdapterContractOptions): Promise<void> {
  const probe = await options.start();
  const declared = {
    files: probe.adapter.files !== undefined,
    edit: probe.adapter.edit !== undefined,
    delete: probe.adapter.delete !== undefined,
    react: probe.adapter.react !== undefined,
    routes: (probe.adapter.routes?.() ?? []).length > 0,
    idempotentSend: probe.adapter.capabilities.idempotentSend,
    threads: probe.platform.threadTarget !== undefined,
    replies: probe.platform.showsReplies,
  };
  await probe.close();

  describe(`ChannelAdapter contract: ${options.name}`, () => {
    let harness: ContractHarness;
    let adapter: ChannelAdapter;
    let platform: PlatformSide;
    let ingress: ReturnType<typeof contractIngress>;
    let stopped = false;

    beforeEach(async () => {
      harness = await options.start();
      adapter = harness.adapter;
      platform = harness.platform;
      ingress = contractIngress();
      stopped = false;
      await adapter.start(ingress);
    });

    afterEach(async () => {
      if (!stopped) await adapter.stop();
      await harness.close();
    });

    /** A case for what the adapter or its platform declared; reported as skipped elsewhere. */
    function when(applies: boolean, title: string, body: () => Promise<void>): void {
      test.skipIf(!applies)(title, body, CASE_TIMEOUT_MS);
    }

    describe("receiving", () => {
      test(
        "start connects and names the bot account; stop disconnects",
        async () => {
          expect(adapter.isConnected()).toBe(true);
          expect(adapter.account).not.toBe("");
          await adapter.stop();
          stopped = true;
          expect(adapter.isConnected()).toBe(false);
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a message the user writes reaches ingress in the inbound shape, answerable in the same chat",
        async () => {
          const written = await platform.write("hello from the contract");
          const message = await waitUntil(() => ingress.calls[0], "the message at ingress");
          expect(inboundMessageSchema.parse(message)).toEqual(message);
          expect(message).toMatchObject({
            channel: adapter.channel,
            account: adapter.account,
            principal: { id: platform.userId, isBot: false },
            replyTarget: platform.dmTarget,
            surface: "dm",
            text: "hello from the contract",
            messageId: written.messageId,
            addressedToBot: true,
          });
          expect(message.action).toBeUndefined();
          if (platform.acknowledged) {
            await waitUntil(() => platform.acknowledged?.(written), "the platform's acknowledgement");
          }
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a refused ingress is not acknowledged: the update comes again, and is acknowledged once admitted",
        async () => {
          const text = "refused twice, then admitted";
          let written: Written | undefined;
          let attempts = 0;
          const acknowledgedWhileRefused: boolean[] = [];
          ingress.decide((message) => {
            if (message.text !== text) throw new Error(`unexpected message at ingress: ${message.text}`);
            attempts += 1;
            // A retry comes after the refusal before it was settled: whatever the platform was told is visible now.
            if (attempts > 1 && written && platform.acknowledged)
              acknowledgedWhileRefused.push(platform.acknowledged(written));
            if (attempts <= 2) throw new Error("database is locked");
            return { kind: "admitted", runId: "run_refused", conversationId: "conv_refused" };
          });
          written = await platform.write(text);
          await waitUntil(() => attempts >= 3, "the update's third delivery");
          expect(new Set(ingress.calls.map((m) => m.updateKey)).size).toBe(1);
          if (platform.acknowledged) {
            expect(acknowledgedWhileRefused).toEqual([false, false]);
            const delivered = written;
            await waitUntil(() => platform.acknowledged?.(delivered), "the acknowledgement after admission");
          }
        },
        CASE_TIMEOUT_MS,
      );

      when(
        declared.routes,
        "a press posted to the adapter's route without the platform's signature is refused before ingress",
        async () => {
          if (!platform.pressUnsigned)
            throw new Error(
              "An adapter that serves routes must be tested with unsigned requests: give pressUnsigned",
            );
          const receipt = await adapter.send(
            platform.dmTarget,
            out("Approve?", { buttons: [[{ label: "Approve", data: "contract:approve" }]] }),
          );
          const status = await platform.pressUnsigned(platform.dmTarget, receipt.messageIds[0]!, "Approve");
          expect(status).toBe(401);
          expect(ingress.calls).toEqual([]);
        },
      );

      test(
        "a press becomes the inbound press shape; its notice is shown to the presser",
        async () => {
          ingress.decide((message) =>
            message.action
              ? { kind: "action", notice: `pressed ${message.action.data}` }
              : { kind: "ignored", reason: "contract" },
          );
          const receipt = await adapter.send(
            platform.dmTarget,
            out("Run the tool?", {
              buttons: [
                [
                  { label: "Approve", data: "contract:approve" },
                  { label: "Deny", data: "contract:deny" },
                ],
              ],
            }),
          );
          await platform.press(platform.dmTarget, receipt.messageIds[0]!, { label: "Deny" });
          const press = await waitUntil(() => ingress.calls.find((m) => m.action), "the press at ingress");
          expect(inboundMessageSchema.parse(press)).toEqual(press);
          expect(press).toMatchObject({
            channel: adapter.channel,
            account: adapter.account,
            principal: { id: platform.userId },
            replyTarget: platform.dmTarget,
            text: "",
            action: { data: "contract:deny" },
          });
          expect(press.action?.interactionId).not.toBe("");
          await waitUntil(
            () => platform.notices().includes("pressed contract:deny"),
            "the press's notice to the presser",
          );
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a press with data no button carries reaches ingress unchanged (ingress verifies the signed data)",
        async () => {
          ingress.decide(() => ({ kind: "action", notice: "That button is not valid." }));
          const receipt = await adapter.send(
            platform.dmTarget,
            out("Approve?", { buttons: [[{ label: "Approve", data: "contract:approve" }]] }),
          );
          await platform.press(platform.dmTarget, receipt.messageIds[0]!, { forgedData: "forged:approve" });
          const press = await waitUntil(
            () => ingress.calls.find((m) => m.action),
            "the forged press at ingress",
          );
          expect(press.action?.data).toBe("forged:approve");
        },
        CASE_TIMEOUT_MS,
      );
    });

    if (options.cases === "receive") return;

    describe("sending", () => {
      test(
        "send: the text arrives in the target chat and the receipt names the message",
        async () => {
          const receipt = await adapter.send(platform.dmTarget, out("an answer from the contract"));
          expect(receipt.messageIds).toHaveLength(1);
          const shown = lastShown(platform, platform.dmTarget);
          expect(shown.text).toBe("an answer from the contract");
          expect(shown.receiptIds).toContain(receipt.messageIds[0]!);
          if (platform.threadTarget !== undefined)
            expect(platform.shown(platform.threadTarget).map((m) => m.text)).not.toContain(
              "an answer from the contract",
            );
        },
        CASE_TIMEOUT_MS,
      );

      when(declared.threads, "send to a thread target arrives in that thread only", async () => {
        const thread = platform.threadTarget!;
        const receipt = await adapter.send(thread, out("into the thread"));
        expect(lastShown(platform, thread)).toMatchObject({ text: "into the thread" });
        expect(lastShown(platform, thread).receiptIds).toContain(receipt.messageIds[0]!);
        expect(platform.shown(platform.dmTarget).map((m) => m.text)).not.toContain("into the thread");
      });

      when(declared.replies, "send with replyTo is shown as a reply to that message", async () => {
        const question = await platform.write("a question to reply to");
        await adapter.send(platform.dmTarget, out("the reply", { replyTo: question.messageId }));
        expect(lastShown(platform, platform.dmTarget)).toMatchObject({
          text: "the reply",
          replyTo: question.messageId,
        });
      });

      test(
        "buttons render as the platform's buttons, with their data",
        async () => {
          const buttons = [
            [
              { label: "Approve", data: "contract:approve" },
              { label: "Deny", data: "contract:deny" },
            ],
          ];
          await adapter.send(platform.dmTarget, out("Run the tool?", { buttons }));
          expect(lastShown(platform, platform.dmTarget).buttons).toEqual(buttons);
          await adapter.send(platform.dmTarget, out("no buttons here"));
          expect(lastShown(platform, platform.dmTarget).buttons ?? []).toEqual([]);
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("editing and deleting", () => {
      when(
        declared.edit,
        "edit replaces the text shown, and an edit without buttons removes them",
        async () => {
          const receipt = await adapter.send(
            platform.dmTarget,
            out("Approve?", { buttons: [[{ label: "Approve", data: "contract:approve" }]] }),
          );
          const id = receipt.messageIds[0]!;
          expect(lastShown(platform, platform.dmTarget).buttons?.flat()).toHaveLength(1);
          await adapter.edit!(platform.dmTarget, id, out("Approved by Alice"));
          const shown = platform.shown(platform.dmTarget);
          expect(shown).toHaveLength(1);
          expect(shown[0]).toMatchObject({ text: "Approved by Alice" });
          expect(shown[0]?.receiptIds).toContain(id);
          expect(shown[0]?.buttons ?? []).toEqual([]);
        },
      );

      when(
        declared.delete,
        "delete removes the message; deleting it again succeeds (a retried delete is harmless)",
        async () => {
          const receipt = await adapter.send(platform.dmTarget, out("to be deleted"));
          await adapter.delete!(platform.dmTarget, receipt.messageIds[0]!);
          expect(platform.shown(platform.dmTarget)).toEqual([]);
          await adapter.delete!(platform.dmTarget, receipt.messageIds[0]!);
        },
      );

      when(
        declared.edit && declared.delete,
        "an edit of a deleted message is platform_rejected, not retryable, and not taken for unchanged",
        async () => {
          const receipt = await adapter.send(platform.dmTarget, out("soon gone"));
          const id = receipt.messageIds[0]!;
          await adapter.delete!(platform.dmTarget, id);
          const error = await failureOf(adapter.edit!(platform.dmTarget, id, out("too late")));
          expect(error).toMatchObject({ code: "platform_rejected", retryable: false });
          // "unchanged" would let the outbox count the edit as delivered.
          expect(error.rejection).toBeUndefined();
          expect(platform.shown(platform.dmTarget)).toEqual([]);
        },
      );
    });

    describe("status reactions", () => {
      when(
        declared.react,
        "react shows one status on the user's message, each in place of the previous, and repeats harmlessly",
        async () => {
          if (!platform.reactions)
            throw new Error("the platform side must read reactions where the adapter reacts");
          const written = await platform.write("react to me");
          await waitUntil(() => ingress.calls[0], "the message at ingress");
          const shown = () => platform.reactions!(platform.dmTarget, written.messageId);
          await adapter.react!(platform.dmTarget, written.messageId, "seen", []);
          const seen = shown();
          expect(seen).toHaveLength(1);
          await adapter.react!(platform.dmTarget, written.messageId, "waiting", ["seen"]);
          await adapter.react!(platform.dmTarget, written.messageId, "done", ["waiting"]);
          const done = shown();
          expect(done).toHaveLength(1);
          expect(done).not.toEqual(seen);
          // A status repeated (a correction's run, after a crash) changes nothing and does not fail.
          await adapter.react!(platform.dmTarget, written.messageId, "done", []);
          expect(shown()).toEqual(done);
          // Every status has its own reaction.
          const all = new Set<string>(done);
          let previous: ReplyStatus = "done";
          for (const status of ["failed", "seen", "waiting"] as const) {
            await adapter.react!(platform.dmTarget, written.messageId, status, [previous]);
            expect(shown()).toHaveLength(1);
            all.add(shown()[0]!);
            previous = status;
          }
          expect(all.size).toBe(4);
        },
      );
      when(
        declared.react,
        "react in place of every other status (after a restart) leaves only the new one, none shown being no error",
        async () => {
          const written = await platform.write("react after a restart");
          await waitUntil(
            () => ingress.calls.find((m) => m.text.includes("after a restart")),
            "the message at ingress",
          );
          const shown = () => platform.reactions!(platform.dmTarget, written.messageId);
          // Before the restart: 👀, then ⏳ added without taking 👀 away (what a lost memory leaves).
          await adapter.react!(platform.dmTarget, written.messageId, "seen", []);
          await adapter.react!(platform.dmTarget, written.messageId, "waiting", []);
          await adapter.react!(platform.dmTarget, written.messageId, "done", ["seen", "waiting", "failed"]);
          const done = shown();
          expect(done).toHaveLength(1);
          await adapter.react!(platform.dmTarget, written.messageId, "failed", []);
          await adapter.react!(platform.dmTarget, written.messageId, "done", ["seen", "waiting", "failed"]);
          expect(shown()).toEqual(done);
        },
      );
    });

    describe("files", () => {
      when(declared.files, "limits are declared, and are within what the platform takes", async () => {
        const limits = adapter.files!.limits;
        expect(limits.maxFileBytes).toBeGreaterThan(0);
        expect(limits.maxCaptionChars).toBeGreaterThan(0);
        expect(limits.maxCaptionChars).toBeLessThanOrEqual(adapter.limits.maxMessageChars);
        if (limits.maxPhotoBytes !== undefined)
          expect(limits.maxPhotoBytes).toBeLessThanOrEqual(limits.maxFileBytes);
        const platformLimits = platform.uploadLimits;
        if (!platformLimits)
          throw new Error("An adapter with files must be tested with the platform's uploadLimits");
        expect(limits.maxFileBytes).toBeLessThanOrEqual(platformLimits.maxFileBytes);
        const photoBytes = limits.maxPhotoBytes ?? limits.maxFileBytes;
        expect(photoBytes).toBeLessThanOrEqual(platformLimits.maxPhotoBytes ?? platformLimits.maxFileBytes);
      });

      when(declared.files, "a file arrives with its name, its bytes and its caption", async () => {
        const receipt = await adapter.files!.send(platform.dmTarget, pdf("the report"));
        const shown = lastShown(platform, platform.dmTarget);
        expect(shown.receiptIds).toContain(receipt.messageIds[0]!);
        expect(shown.text).toBe("the report");
        expect(shown.files).toHaveLength(1);
        expect(shown.files?.[0]?.name).toBe("report.pdf");
        expect([...(shown.files?.[0]?.bytes ?? [])]).toEqual([...PDF]);
      });

      when(
        declared.files,
        "a file over the declared limit is refused by the outbox before any upload",
        async () => {
          const limits = adapter.files!.limits;
          expect(
            mediaRefusal(
              { filename: "big.pdf", mimeType: "application/pdf", sizeBytes: limits.maxFileBytes },
              adapter.channel,
              limits,
            ),
          ).toBeNull();
          const reason = await deliverOversizedFile(adapter, platform.dmTarget, limits.maxFileBytes + 1);
          expect(reason).toContain("is over");
          expect(reason).toContain("it was not sent");
          expect(platform.uploadCalls()).toBe(0);
          expect(platform.shown(platform.dmTarget)).toEqual([]);
        },
      );
    });

    describe("errors", () => {
      const decide = () => createRetryPolicy({ idempotentSend: adapter.capabilities.idempotentSend });

      test(
        "a 429 is platform_rate_limited with the platform's retry-after; the outbox waits that long",
        async () => {
          platform.fail("send", "rate_limited");
          const error = await failureOf(adapter.send(platform.dmTarget, out("hi")));
          expect(error).toMatchObject({ code: "platform_rate_limited", retryable: true });
          expect(error.retryAfterMs).toBeGreaterThanOrEqual(7_000);
          expect(error.retryAfterMs).toBeLessThan(8_000);
          expect(decide()(error, 1)).toEqual({ retry: true, delayMs: error.retryAfterMs! });
          expect(platform.shown(platform.dmTarget)).toEqual([]);
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a 5xx is platform_unavailable and transient: the outbox retries",
        async () => {
          platform.fail("send", "unavailable");
          const error = await failureOf(adapter.send(platform.dmTarget, out("hi")));
          expect(error).toMatchObject({ code: "platform_unavailable", retryable: true });
          expect(decide()(error, 1)).toMatchObject({ retry: true });
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a 4xx refusal is platform_rejected and permanent: the outbox fails the record with the platform's reason",
        async () => {
          platform.fail("send", "rejected");
          const error = await failureOf(adapter.send(platform.dmTarget, out("hi")));
          expect(error).toMatchObject({ code: "platform_rejected", retryable: false });
          expect(decide()(error, 1)).toEqual({ retry: false, outcome: "failed", reason: error.message });
        },
        CASE_TIMEOUT_MS,
      );

      test(
        "a lost answer is platform_timeout: ambiguous unless the adapter's sends are idempotent",
        async () => {
          platform.fail("send", "answer_lost");
          const error = await failureOf(adapter.send(platform.dmTarget, out("maybe sent")));
          expect(error).toMatchObject({ code: "platform_timeout", retryable: true });
          const decision = decide()(error, 1);
          if (adapter.capabilities.idempotentSend) expect(decision).toMatchObject({ retry: true });
          else expect(decision).toMatchObject({ retry: false, outcome: "ambiguous" });
        },
        CASE_TIMEOUT_MS,
      );

      when(
        declared.idempotentSend,
        "idempotentSend: a send repeated with the same key after a lost answer shows once",
        async () => {
          const message = out("exactly once");
          platform.fail("send", "answer_lost");
          await failureOf(adapter.send(platform.dmTarget, message));
          const receipt = await adapter.send(platform.dmTarget, message);
          const shown = platform.shown(platform.dmTarget);
          expect(shown.map((m) => m.text)).toEqual(["exactly once"]);
          expect(shown[0]?.receiptIds).toContain(receipt.messageIds[0]!);
        },
      );

      when(declared.files, "a 5xx on upload is transient like a send's", async () => {
        platform.fail("upload", "unavailable");
        const error = await failureOf(adapter.files!.send(platform.dmTarget, pdf("")));
        expect(error).toMatchObject({ code: "platform_unavailable", retryable: true });
      });
    });
  });
}

/**
 * Runs the outbox's delivery worker with `adapter` on a media record whose stated size is
 * `sizeBytes` (no blob is stored: a refused file is never read) and returns the reason the
 * record failed with.
 */
async function deliverOversizedFile(
  adapter: ChannelAdapter,
  target: string,
  sizeBytes: number,
): Promise<string> {
  const db = new OutboxDb();
  const blobDir = mkdtempSync(join(tmpdir(), "contract-blobs-"));
  const repo = db.repository();
  const worker = createDeliveryWorker({
    repo,
    adapters: new Map([[adapter.channel, adapter]]),
    clock: systemClock,
    logger: silentLogger,
    blobs: new DirectoryBlobStore(blobDir),
  });
  try {
    const media = { blobId: "b".repeat(64), filename: "big.pdf", mimeType: "application/pdf", sizeBytes };
    await repo.insert(
      [
        messageInsert(target, "the big report", {
          key: "run_big:file:1",
          runId: "run_big",
          channel: adapter.channel,
          account: adapter.account,
          media,
        }),
      ],
      systemClock.now(),
    );
    await worker.start();
    worker.notify();
    const failed = await waitUntil(async () => {
      const record = await repo.show("run_big:file:1");
      return record?.state === "failed" ? record : undefined;
    }, "the oversized file's record to fail");
    return failed.lastError ?? "";
  } finally {
    await worker.drain(0);
    db.close();
    rmSync(blobDir, { recursive: true, force: true });
  }
}
