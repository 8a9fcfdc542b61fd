import type { DiscordConfigInput } from "../../../channels/discord/config.ts";
import { createDiscordAdapter, type DiscordAdapter } from "../../../channels/discord/index.ts";
import type { InboundMessage, IngressOutcome } from "../../../channels/types.ts";
import {
  type DiscordEmulator,
  type DiscordEmulatorOptions,
  startDiscordEmulator,
} from "../../emulators/discord/index.ts";
import { type LogRecord, recordingLogger } from "../../support/logger.ts";

export interface Harness {
  emulator: DiscordEmulator;
  adapter: DiscordAdapter;
  /** Every message the adapter handed to ingress, in order. */
  received: InboundMessage[];
  /** What the adapter logged, through the project's logger. */
  logs: LogRecord[];
  /** Resolves with the first received message matching `predicate`. */
  nextInbound(predicate: (message: InboundMessage) => boolean, timeoutMs?: number): Promise<InboundMessage>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  emulator?: DiscordEmulatorOptions;
  config?: Partial<DiscordConfigInput>;
  /** Ingress behaviour; default admits everything. */
  ingress?: (message: InboundMessage) => Promise<IngressOutcome>;
  ingressRetryDelaysMs?: number[];
  start?: boolean;
}

/** An emulator plus a DiscordAdapter connected to it with a recording ingress. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const emulator = startDiscordEmulator(options.emulator);
  const received: InboundMessage[] = [];
  const logger = recordingLogger();
  const adapter = createDiscordAdapter(
    {
      token: emulator.token,
      apiUrl: emulator.apiUrl,
      requestTimeoutMs: 1000,
      readyTimeoutMs: 3000,
      ...options.config,
    },
    {
      logger,
      ...(options.ingressRetryDelaysMs ? { ingressRetryDelaysMs: options.ingressRetryDelaysMs } : {}),
    },
  );
  const admit = async (message: InboundMessage): Promise<IngressOutcome> => {
    const outcome = options.ingress
      ? await options.ingress(message)
      : {
          kind: "admitted" as const,
          runId: `run_${message.updateKey}`,
          conversationId: message.conversationKey,
        };
    received.push(message);
    return outcome;
  };
  if (options.start !== false) await adapter.start(admit);
  return {
    emulator,
    adapter,
    received,
    logs: logger.records,
    nextInbound: (predicate, timeoutMs = 2000) =>
      poll(() => received.find(predicate), timeoutMs, "an inbound message"),
    close: async () => {
      await adapter.stop();
      await emulator.close();
    },
  };
}

/** Polls `probe` every 5 ms until it returns a value; rejects after `timeoutMs`. */
export async function poll<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await Bun.sleep(5);
  }
}
