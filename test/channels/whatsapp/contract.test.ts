import { createWhatsAppAdapter } from "../../../channels/whatsapp/adapter.ts";
import {
  type Fault,
  MEDIA_LIMITS,
  startWhatsAppEmulator,
  type WebhookDelivery,
  type WebhookMessage,
  type WhatsAppEmulator,
} from "../../emulators/whatsapp/index.ts";
import { changeValue, newWamid, secondsString, webhookBody } from "../../emulators/whatsapp/payloads.ts";
import {
  type ContractFault,
  type ContractHarness,
  type PlatformSide,
  runAdapterContract,
} from "../adapter-contract.ts";
import { recordingLogger, serveRoutes } from "../slack/helpers.ts";

const USER = "15551234567";
const VERIFY_TOKEN = "contract-verify-token";

const FAULTS: Record<ContractFault, Fault> = {
  rate_limited: { kind: "rate_limited", retryAfterSeconds: 7 },
  unavailable: { kind: "server_error", status: 500 },
  // Meta's "message undeliverable": the user cannot receive it; sending again changes nothing.
  rejected: { kind: "graph_error", status: 400, code: 131026, title: "Message undeliverable" },
  answer_lost: { kind: "reset_after_effect" },
};

function whatsappSide(emulator: WhatsAppEmulator): PlatformSide {
  const notices: string[] = [];
  const promptIds = new Set<string>();
  return {
    userId: USER,
    dmTarget: USER,
    showsReplies: true,
    uploadLimits: {
      maxFileBytes: MEDIA_LIMITS.document.maxBytes,
      maxPhotoBytes: MEDIA_LIMITS.image.maxBytes,
    },
    async write(text) {
      const { message, delivery } = emulator.incoming({ from: USER, name: "Alice", text });
      return { messageId: message.id, delivery };
    },
    shown(target) {
      return emulator
        .messages(target)
        .filter((entry) => !notices.includes(entry.wamid))
        .map((entry) => {
          const media = entry.media?.id === undefined ? undefined : emulator.media.get(entry.media.id);
          return {
            receiptIds: [entry.wamid],
            text: entry.text ?? "",
            ...(entry.replyTo === undefined ? {} : { replyTo: entry.replyTo }),
            ...(entry.buttons
              ? { buttons: [entry.buttons.map((b) => ({ label: b.title, data: b.id }))] }
              : {}),
            ...(media
              ? { files: [{ name: entry.media?.filename ?? media.filename ?? "", bytes: media.bytes }] }
              : {}),
          };
        });
    },
    async press(target, messageId, button) {
      promptIds.add(messageId);
      const { delivery } = emulator.press(
        target,
        messageId,
        "label" in button ? button.label : { forgedId: button.forgedData },
      );
      await emulator.waitForDelivery(delivery);
    },
    notices() {
      // A notice is an ordinary message on WhatsApp: any bot message after a press that is not a prompt.
      for (const entry of emulator.messages(USER))
        if (!promptIds.has(entry.wamid) && entry.buttons === undefined && !notices.includes(entry.wamid))
          notices.push(entry.wamid);
      return notices.map((wamid) => emulator.message(wamid)?.text ?? "");
    },
    async pressUnsigned(target, messageId, label) {
      const button = emulator.message(messageId)?.buttons?.find((b) => b.title === label);
      if (!button) throw new Error(`message ${messageId} has no button "${label}"`);
      const body = webhookBody(emulator.business, [
        changeValue(emulator.business, {
          contacts: [{ profile: { name: "Alice" }, wa_id: target }],
          messages: [
            {
              from: target,
              id: newWamid(target),
              timestamp: secondsString(Date.now()),
              type: "interactive",
              context: { from: emulator.business.displayPhoneNumber, id: messageId },
              interactive: { type: "button_reply", button_reply: button },
            } satisfies WebhookMessage,
          ],
        }),
      ]);
      const delivery = await emulator.waitForDelivery(emulator.deliverRaw(body, "forged"));
      return delivery.attempts[0]?.status ?? 0;
    },
    fail(operation, fault) {
      emulator.injectFault(operation === "send" ? "messages" : "media_upload", FAULTS[fault]);
    },
    acknowledged(written) {
      return (written.delivery as WebhookDelivery).attempts.some((a) => a.status === 200);
    },
    uploadCalls: () => emulator.callsOf("media_upload").length,
  };
}

await runAdapterContract({
  name: "whatsapp (Cloud API webhooks)",
  async start(): Promise<ContractHarness> {
    // The contract sends several messages to one user at once; the pair rate has its own tests.
    const emulator = startWhatsAppEmulator({ limits: { pairIntervalMs: null } });
    const adapter = createWhatsAppAdapter(
      {
        accessToken: emulator.accessToken,
        phoneNumberId: emulator.business.phoneNumberId,
        appSecret: emulator.appSecret,
        verifyToken: VERIFY_TOKEN,
        apiRoot: emulator.url,
        requestTimeoutMs: 300,
      },
      { logger: recordingLogger() },
    );
    const server = serveRoutes(adapter.routes());
    emulator.setWebhookUrl(`${server.url}/whatsapp/webhook`);
    // The user wrote first: the 24-hour window is open.
    emulator.openWindow(USER);
    return {
      adapter,
      platform: whatsappSide(emulator),
      async close() {
        await emulator.close();
        await server.stop();
      },
    };
  },
});
