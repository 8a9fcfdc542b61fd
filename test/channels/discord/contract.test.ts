import { createDiscordAdapter } from "../../../channels/discord/index.ts";
import { type DiscordEmulator, type Fault, startDiscordEmulator } from "../../emulators/discord/index.ts";
import { MAX_UPLOAD_BYTES } from "../../emulators/discord/rest.ts";
import type { GatewayMessage } from "../../emulators/discord/world.ts";
import { recordingLogger } from "../../support/logger.ts";
import { type ContractFault, type PlatformSide, runAdapterContract } from "../adapter-contract.ts";

/** Creates and uploads go through the same route. */
const CREATE = "POST /channels/:id/messages" as const;
const REQUEST_TIMEOUT_MS = 300;

const FAULTS: Record<ContractFault, Fault> = {
  rate_limited: { kind: "rate_limit", retryAfterMs: 7_000 },
  unavailable: { kind: "server_error", status: 500 },
  rejected: { kind: "api_error", status: 403, code: 50007, message: "Cannot send messages to this user" },
  answer_lost: { kind: "hang", afterCommit: true },
};

/** A message's buttons by row, as label and custom_id. */
function buttonsOf(message: GatewayMessage): Array<Array<{ label: string; data: string }>> {
  const rows = (message.components ?? []) as Array<{
    components?: Array<{ label?: string; custom_id?: string }>;
  }>;
  return rows.map((row) =>
    (row.components ?? []).map((b) => ({ label: b.label ?? "", data: b.custom_id ?? "" })),
  );
}

function discordSide(emulator: DiscordEmulator, userId: string, threadId: string): PlatformSide {
  const botMessages = (target: string) =>
    emulator.visibleMessages(target.replace(/^dc:/, "")).filter((m) => m.author.id === emulator.bot.id);
  return {
    userId,
    dmTarget: `dc:${emulator.dmChannelId(userId)}`,
    threadTarget: `dc:${threadId}`,
    showsReplies: true,
    uploadLimits: { maxFileBytes: MAX_UPLOAD_BYTES },
    async write(text) {
      return { messageId: emulator.sendDm(userId, text).id, delivery: null };
    },
    reactions: (_target, messageId) => emulator.reactionsOn(messageId),
    shown(target) {
      return botMessages(target).map((m) => {
        const buttons = buttonsOf(m);
        const uploads = emulator.message(m.id)?.uploads;
        return {
          receiptIds: [m.id],
          text: m.content,
          ...(m.message_reference?.message_id ? { replyTo: m.message_reference.message_id } : {}),
          ...(buttons.length > 0 ? { buttons } : {}),
          ...(uploads ? { files: uploads.map((u) => ({ name: u.filename, bytes: u.bytes })) } : {}),
        };
      });
    },
    async press(target, messageId, button) {
      if ("forgedData" in button) {
        emulator.pressButton(messageId, userId, button.forgedData, { forged: true });
        return;
      }
      const message = botMessages(target).find((m) => m.id === messageId);
      const customId =
        message &&
        buttonsOf(message)
          .flat()
          .find((b) => b.label === button.label)?.data;
      if (customId === undefined) throw new Error(`message ${messageId} has no button "${button.label}"`);
      emulator.pressButton(messageId, userId, customId);
    },
    notices: () => emulator.buttonPresses.flatMap((press) => press.followUps.map((f) => f.content)),
    fail(_operation, fault) {
      emulator.failNext(CREATE, FAULTS[fault]);
    },
    uploadCalls: () => emulator.restCalls.filter((call) => call.route === CREATE).length,
  };
}

await runAdapterContract({
  name: "discord",
  async start() {
    const emulator = startDiscordEmulator();
    const alice = emulator.createUser("alice");
    const threadId = emulator.createThread({ name: "contract", ownerId: emulator.bot.id });
    const adapter = createDiscordAdapter(
      {
        token: emulator.token,
        apiUrl: emulator.apiUrl,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        readyTimeoutMs: 3_000,
      },
      // Discord never redelivers: a refused ingress is retried by the adapter, quickly here.
      { logger: recordingLogger(), ingressRetryDelaysMs: [10, 10, 10] },
    );
    return { adapter, platform: discordSide(emulator, alice.id, threadId), close: () => emulator.close() };
  },
});
