/**
 * What a delete (Discord's MESSAGE_DELETE, Matrix's redaction…) must do to the run it withdraws,
 * checked the same way for each platform against an in-process gateway.
 */
import { expect } from "bun:test";
import type { InProcessGateway } from "../../support/gateway.ts";
import { eventually } from "./gateway-process.ts";
import { sampleIn } from "./metrics.ts";

const TIMEOUT_MS = 10_000;

export function withdrawalChecks(running: () => InProcessGateway, channel: string) {
  const gateway = () => running().gateway;
  const withdrawals = () => running().logs.filter((r) => r.event === "ingress.withdrawn");
  const runOf = async (runId: string) => (await gateway().stores.runtime.loadRun(runId))?.run;
  const duplicates = async () =>
    sampleIn(await gateway().renderMetrics(), "switchboard_inbound_duplicates_total", { channel });
  return {
    withdrawals,
    runOf,
    /** The `nth` withdrawal stopped the running answer to `messageId`: cancelled, its reason kept. */
    async expectStopped(nth: number, messageId: string, what: string): Promise<void> {
      await eventually(async () => withdrawals().length === nth + 1, TIMEOUT_MS, what);
      const stopped = withdrawals()[nth]!;
      expect(stopped).toMatchObject({ withdrawn: messageId, effect: "stopped" });
      await eventually(
        async () => (await runOf(String(stopped.runId)))?.state === "cancelled",
        TIMEOUT_MS,
        `the run withdrawn by ${what} to stop`,
      );
      expect((await runOf(String(stopped.runId)))?.stopReason).toBe("withdrawn");
    },
    /** `redeliver` hands the same delete over again: counted as a duplicate, nothing withdrawn. */
    async expectDuplicate(redeliver: () => void, what: string): Promise<void> {
      const before = await duplicates();
      const withdrawn = withdrawals().length;
      redeliver();
      await eventually(async () => (await duplicates()) === before + 1, TIMEOUT_MS, what);
      expect(withdrawals()).toHaveLength(withdrawn);
    },
  };
}
