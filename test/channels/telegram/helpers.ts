import type { TelegramAdapterEvent } from "../../../channels/telegram/events.ts";
import type { InboundMessage, Ingress, IngressOutcome, IngressTiming } from "../../../channels/types.ts";

/** An ingress that records what it got; `behaviour` decides each outcome (default: admitted). */
export function recordingIngress(
  behaviour: (message: InboundMessage, attempt: number) => Promise<IngressOutcome> | IngressOutcome = () =>
    admitted(),
): Ingress & { received: InboundMessage[]; timings: (IngressTiming | undefined)[] } {
  const received: InboundMessage[] = [];
  const timings: (IngressTiming | undefined)[] = [];
  const attempts = new Map<string, number>();
  const ingress = async (message: InboundMessage, timing?: IngressTiming) => {
    received.push(message);
    timings.push(timing);
    const attempt = (attempts.get(message.updateKey) ?? 0) + 1;
    attempts.set(message.updateKey, attempt);
    return await behaviour(message, attempt);
  };
  return Object.assign(ingress, { received, timings });
}

export function admitted(): IngressOutcome {
  return { kind: "admitted", runId: "run_test", conversationId: "conv_test" };
}

export function eventLog(): {
  events: TelegramAdapterEvent[];
  onEvent: (event: TelegramAdapterEvent) => void;
} {
  const events: TelegramAdapterEvent[] = [];
  return { events, onEvent: (event) => events.push(event) };
}

export async function waitUntil<T>(
  probe: () => T | undefined | null | false,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(5);
  }
}
