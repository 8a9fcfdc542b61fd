/**
 * The `api` channel: conversations an HTTP client holds through the conversation API
 * (src/gateway/http/conversation-api.ts). Messages arrive through `receive` and go through ingress
 * like any platform's; the answer is the run itself, which the client reads as Server-Sent Events
 * (`GET /api/runs/:id/events`), so a send records the delivery and shows nothing anywhere.
 */

import { SwitchboardError } from "../../src/errors.ts";
import { downloadFile, httpUrl } from "../download.ts";
import type {
  ChannelAdapter,
  ChannelAdmission,
  ChannelCapabilities,
  ChannelLimits,
  InboundMessage,
  Ingress,
  IngressOutcome,
  OutgoingMessage,
  RemoteFile,
  SendReceipt,
} from "../types.ts";
import type { ApiConfig } from "./config.ts";
import { API_ACCOUNT, decodeTarget } from "./keys.ts";

/** Nothing is shown anywhere, so a repeated send shows nothing twice. */
export const API_CAPABILITIES: ChannelCapabilities = { idempotentSend: true };

/**
 * The token authenticates the caller and the conversation API checks the conversation is theirs,
 * so no allow list applies; the per-user flood limit of the `api:dm` surface does. The client
 * picks the message keys, so a key reused with other content is refused as a client bug.
 */
export const API_ADMISSION: ChannelAdmission = {
  ownAccessControl: true,
  ownFloodLimit: false,
  clientChosenKeys: true,
};

export interface ApiChannel extends ChannelAdapter {
  readonly channel: "api";
  readonly account: typeof API_ACCOUNT;
  /** Hands one message to ingress; `platform_unavailable` when the channel is not started. */
  receive(message: InboundMessage): Promise<IngressOutcome>;
  openFile(ref: string, signal: AbortSignal): Promise<RemoteFile>;
}

export function createApiChannel(config: ApiConfig): ApiChannel {
  let ingress: Ingress | null = null;
  const inFlight = new Set<Promise<unknown>>();
  const limits: ChannelLimits = {
    maxMessageChars: config.maxMessageChars,
    perChatIntervalMs: 0,
    perAccountPerSecond: 1000,
    editIntervalMs: 0,
  };

  return {
    channel: "api",
    account: API_ACCOUNT,
    capabilities: API_CAPABILITIES,
    limits,
    // The client renders the model's Markdown itself, as the web chat does.
    markup: "commonmark",
    admission: API_ADMISSION,

    async start(next: Ingress): Promise<void> {
      ingress = next;
    },

    async stop(): Promise<void> {
      ingress = null;
      await Promise.allSettled([...inFlight]);
    },

    isConnected: () => ingress !== null,

    receive(message) {
      if (!ingress)
        return Promise.reject(
          new SwitchboardError(
            "platform_unavailable",
            "The api channel is not started (the gateway is starting or stopping); send the message again shortly.",
            { retryable: true },
          ),
        );
      const call = ingress(message);
      inFlight.add(call);
      const forget = () => inFlight.delete(call);
      call.then(forget, forget);
      return call;
    },

    async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
      decodeTarget(target);
      return { messageIds: [message.idempotencyKey] };
    },

    async openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
      return downloadFile("api", httpUrl("api", ref).toString(), { signal });
    },
  };
}
