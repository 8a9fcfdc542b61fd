import type { SwitchboardError } from "../../src/errors.ts";

/** What the adapter reports about receiving; the gateway logs or counts these. No secrets inside. */
export type TelegramAdapterEvent =
  /** The update is acknowledged without reaching ingress (unknown kind, service message…). */
  | { kind: "update_skipped"; updateId: number; reason: string }
  /** Ingress rejected: the update stays unconfirmed and is fetched again after `retryInMs` (polling). */
  | { kind: "ingress_failed"; updateId: number; error: unknown; retryInMs?: number }
  /** A getUpdates call failed; grammY retries it by itself. */
  | { kind: "polling_error"; error: SwitchboardError }
  /** Polling ended on an error grammY does not retry (401 token revoked, 409 another poller). */
  | { kind: "polling_stopped"; error: SwitchboardError }
  /** A button press was handled but answerCallbackQuery failed (the client's spinner times out). */
  | { kind: "callback_answer_failed"; updateId: number; reason: string }
  /** A webhook request was refused before reaching ingress. */
  | { kind: "webhook_rejected"; status: 400 | 401 | 503; reason: string }
  /** The command menu was set (`calls` setMyCommands/deleteMyCommands calls) or was already current. */
  | { kind: "commands_registered"; calls: number }
  | { kind: "commands_unchanged" }
  /** Commands left out of the menu: over Telegram's limits (each named with why). */
  | { kind: "commands_dropped"; dropped: Array<{ name: string; reason: string }>; hint: string }
  /** Setting the menu failed; the adapter runs without it (text commands still work). */
  | { kind: "commands_failed"; error: string; hint: string };

export type TelegramEventSink = (event: TelegramAdapterEvent) => void;
