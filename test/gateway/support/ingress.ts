import type { InboundMessage, IngressOutcome } from "../../../channels/types.ts";
import { createScheduleService, type ScheduleService } from "../../../schedules/service.ts";
import { createChatCommands } from "../../../src/gateway/commands.ts";
import type { SurfaceOverride } from "../../../src/gateway/config/surfaces.ts";
import { createIngress } from "../../../src/gateway/ingress.ts";
import { createMetrics } from "../../../src/gateway/metrics.ts";
import { systemClock } from "../../../src/util/clock.ts";
import { recordingLogger } from "../../support/logger.ts";
import type { RuntimeHarness } from "../../support/runtime.ts";
import { fileConfig } from "./config.ts";

/**
 * Ingress on a harness's real runtime and store, with the chat commands and a schedule service that
 * dispatches nothing, for Telegram DMs under `dm`'s settings. Stop `schedules` after the test.
 */
export function dmIngress(
  harness: RuntimeHarness,
  dm: SurfaceOverride,
): {
  ingress: ReturnType<typeof createIngress>;
  logger: ReturnType<typeof recordingLogger>;
  schedules: ScheduleService;
} {
  const schedules = createScheduleService({
    repository: harness.stores.schedules,
    clock: systemClock,
    dispatch: async () => ({ status: "retry", reason: "not dispatched in these tests" }),
  });
  const logger = recordingLogger();
  const ingress = createIngress({
    runtime: harness.runtime,
    store: harness.stores.runtime,
    file: fileConfig({ surfaces: { "telegram:dm": dm } }),
    allowLists: { telegram: { kind: "everyone" } },
    admissionOf: () => undefined,
    commands: createChatCommands({
      runtime: harness.runtime,
      store: harness.stores.runtime,
      state: harness.stores.runtime,
      outbox: harness.stores.outbox,
      schedules,
      defaultTimezone: "UTC",
      clock: systemClock,
      notify: () => {},
    }),
    metrics: createMetrics(),
    clock: systemClock,
    logger,
  });
  return { ingress, logger, schedules };
}

/** A message of alice's in her DM with bot1 (chat 1001). */
export const dmMessage = (
  updateKey: string,
  text: string,
  overrides: Partial<InboundMessage> = {},
): InboundMessage => ({
  channel: "telegram",
  account: "bot1",
  updateKey,
  principal: { id: "alice", isBot: false },
  conversationKey: "tg:dm:1001",
  replyTarget: "1001",
  surface: "dm",
  text,
  messageId: updateKey,
  addressedToBot: true,
  attachments: [],
  receivedAtMs: Date.now(),
  ...overrides,
});

export function admitted(outcome: IngressOutcome): { runId: string; conversationId: string } {
  if (outcome.kind !== "admitted") throw new Error(`expected an admission, got ${JSON.stringify(outcome)}`);
  return outcome;
}

export async function runRecord(harness: RuntimeHarness, runId: string) {
  const view = await harness.stores.runtime.loadRun(runId);
  if (!view) throw new Error(`run ${runId} is unknown`);
  return view.run;
}

/** Reads until `done` holds (5 s at the most), for what ingress sets going in the background. */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await Bun.sleep(10);
  }
}
