import type { Update } from "grammy/types";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import type { TelegramConfigInput } from "../../../channels/telegram/config.ts";
import type { HttpRoute } from "../../../channels/types.ts";
import { MAX_FILE_UPLOAD_BYTES, MAX_PHOTO_UPLOAD_BYTES } from "../../emulators/telegram/bot-api.ts";
import {
  type Fault,
  privateChat,
  startTelegramEmulator,
  supergroupChat,
  type TelegramEmulator,
  user,
} from "../../emulators/telegram/index.ts";
import { FakeClock } from "../../support/fake-clock.ts";
import {
  type ContractFault,
  type PlatformSide,
  runAdapterContract,
  type Written,
} from "../adapter-contract.ts";

const alice = user(1001, "Alice");
const forum = supergroupChat(-1005001, "Team", { isForum: true });
const TOPIC = 77;
const WEBHOOK_SECRET = "contract_webhook_secret_0123";
const UPLOAD_METHODS = ["sendDocument", "sendPhoto", "sendVoice"];

const FAULTS: Record<ContractFault, Fault> = {
  rate_limited: { kind: "rate_limited", retryAfterSeconds: 7 },
  unavailable: { kind: "server_error" },
  rejected: { kind: "api_error", status: 403, description: "Forbidden: bot was blocked by the user" },
  answer_lost: { kind: "reset_after_effect" },
};

/** "<chat>" or "<chat>:<topic>", the adapter's reply target. */
function chatOf(target: string): { chatId: number; threadId: number | undefined } {
  const [chat, thread] = target.split(":");
  return { chatId: Number(chat), threadId: thread === undefined ? undefined : Number(thread) };
}

function telegramSide(
  emulator: TelegramEmulator,
  routeUrl: string | null,
): PlatformSide & { acknowledged(written: Written): boolean } {
  return {
    userId: String(alice.id),
    dmTarget: String(alice.id),
    threadTarget: `${forum.id}:${TOPIC}`,
    showsReplies: true,
    uploadLimits: { maxFileBytes: MAX_FILE_UPLOAD_BYTES, maxPhotoBytes: MAX_PHOTO_UPLOAD_BYTES },
    async write(text) {
      const { update, message } = emulator.incoming({ chat: privateChat(alice), from: alice, text });
      return { messageId: String(message.message_id), delivery: update.update_id };
    },
    reactions: (target, messageId) => emulator.reactionsOn(chatOf(target).chatId, Number(messageId)),
    shown(target) {
      const { chatId, threadId } = chatOf(target);
      return emulator
        .messages(chatId)
        .filter((m) => m.fromBot && m.threadId === threadId)
        .map((m) => ({
          receiptIds: [String(m.messageId)],
          text: m.visibleText,
          ...(m.replyToMessageId === undefined ? {} : { replyTo: String(m.replyToMessageId) }),
          ...(m.buttons
            ? { buttons: m.buttons.map((row) => row.map((b) => ({ label: b.text, data: b.callbackData }))) }
            : {}),
          ...(m.file ? { files: [{ name: m.file.filename, bytes: m.file.bytes }] } : {}),
        }));
    },
    async press(target, messageId, button) {
      emulator.press(chatOf(target).chatId, Number(messageId), alice, button);
    },
    notices: () => emulator.callbackAnswers().map((answer) => answer.text),
    ...(routeUrl === null
      ? {}
      : {
          async pressUnsigned(target, messageId, label) {
            const visible = emulator
              .messages(chatOf(target).chatId)
              .find((m) => m.messageId === Number(messageId));
            const data = visible?.buttons?.flat().find((b) => b.text === label)?.callbackData;
            const update = {
              update_id: 900_001,
              callback_query: { id: "9001", from: alice, message: visible?.raw, chat_instance: "c", data },
            } satisfies Partial<Update>;
            const response = await fetch(routeUrl, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(update),
            });
            return response.status;
          },
        }),
    fail(operation, fault) {
      emulator.injectFault(operation === "send" ? "sendMessage" : "sendDocument", FAULTS[fault]);
    },
    acknowledged: (written) => emulator.confirmedUpdateIds().includes(written.delivery as number),
    uploadCalls: () => emulator.calls.filter((call) => UPLOAD_METHODS.includes(call.method)).length,
  };
}

function startEmulator(options: Parameters<typeof startTelegramEmulator>[0] = {}): TelegramEmulator {
  const emulator = startTelegramEmulator(options);
  emulator.addChat(privateChat(alice));
  emulator.addChat(forum);
  emulator.addTopic(forum.id, TOPIC, "Deploys");
  return emulator;
}

const common = (emulator: TelegramEmulator) =>
  ({
    token: emulator.token,
    apiRoot: emulator.url,
    requestTimeoutMs: 2_000,
  }) satisfies Partial<TelegramConfigInput>;

await runAdapterContract({
  name: "telegram (long polling)",
  async start() {
    const emulator = startEmulator();
    const adapter = new TelegramAdapter(
      { ...common(emulator), mode: "polling", pollTimeoutSeconds: 1 },
      // Backoff after a refused ingress ends at once; the long polls are real.
      { clock: new FakeClock(Date.now(), { instantSleeps: true }) },
    );
    return { adapter, platform: telegramSide(emulator, null), close: () => emulator.close() };
  },
});

await runAdapterContract({
  name: "telegram (webhook)",
  cases: "receive",
  async start() {
    const emulator = startEmulator({ webhook: { firstRetryDelayMs: 20, maxAttempts: 5 } });
    let routes: HttpRoute[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        const path = new URL(request.url).pathname;
        const route = routes.find((r) => r.path === path && r.method === request.method);
        return route ? route.handle(request) : new Response("no route", { status: 404 });
      },
    });
    const url = `http://127.0.0.1:${server.port}/telegram/webhook`;
    const adapter = new TelegramAdapter({
      ...common(emulator),
      mode: "webhook",
      webhookUrl: url,
      webhookSecret: WEBHOOK_SECRET,
    });
    routes = adapter.routes();
    return {
      adapter,
      platform: telegramSide(emulator, url),
      async close() {
        await emulator.close();
        await server.stop(true);
      },
    };
  },
});
