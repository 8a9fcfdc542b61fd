import { describe, expect, test } from "bun:test";
import type { BudgetStore } from "../../src/budgets/store.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { Usage } from "../../src/runtime/types.ts";
import { admitRequest } from "./conformance.ts";

export interface BudgetHarness {
  runtime: OperatorRuntimeStore;
  budgets: BudgetStore;
  close(): Promise<void>;
}

const T0 = 1_800_000_000_000;
/** A fresh PostgreSQL database with every migration takes seconds on a loaded machine. */
const CONFORMANCE_TIMEOUT_MS = 30_000;

/** The BudgetStore contract, run against each engine: usage comes from runs' recorded steps. */
export function runBudgetConformance(engine: string, open: () => Promise<BudgetHarness>): void {
  describe(`budget store conformance (${engine})`, () => {
    const withHarness = (fn: (h: BudgetHarness) => Promise<void>) => async () => {
      const h = await open();
      try {
        await fn(h);
      } finally {
        await h.close();
      }
    };

    /** A run by `user` on `channel:surface`, admitted at `atMs`, that records one step per usage. */
    async function spend(
      h: BudgetHarness,
      where: {
        conversationId: string;
        user: string;
        channel?: string;
        surface?: string;
        /** The named account the run came through; absent: the channel's `default` account. */
        accountName?: string;
        atMs: number;
      },
      usages: Usage[],
    ): Promise<string> {
      const channel = where.channel ?? "telegram";
      const admitted = await h.runtime.admit(
        admitRequest(where.conversationId, `k-${where.atMs}-${Math.random()}`, {
          context: {
            channel,
            surface: where.surface ?? "dm",
            principal: { id: where.user },
            ...(where.accountName === undefined ? {} : { accountName: where.accountName }),
          },
          nowMs: where.atMs,
        }),
      );
      const acquired = await h.runtime.acquireRun({
        runId: admitted.runId,
        owner: "w",
        nowMs: where.atMs,
        leaseMs: 60_000,
      });
      if (!acquired) throw new Error("could not acquire the run");
      for (const [n, usage] of usages.entries()) {
        await h.runtime.checkpoint({
          fence: acquired.fence,
          assistantParts: [{ type: "text", text: `step ${n}` }],
          step: {
            step: n,
            model: "m",
            finishReason: "stop",
            usage,
            startedAtMs: where.atMs,
            finishedAtMs: where.atMs,
          },
          joinedInputIds: [],
          nowMs: where.atMs,
        });
      }
      await h.runtime.commitTerminal({
        fence: acquired.fence,
        state: "completed",
        assistantParts: [{ type: "text", text: "done" }],
        nowMs: where.atMs,
      });
      return admitted.runId;
    }

    test(
      "a user of a named account is a principal of its own: <channel>:<account>:<user>; the default account's stays <channel>:<user>",
      withHarness(async (h) => {
        const usage = (tokens: number): Usage => ({ inputTokens: tokens, outputTokens: 0 });
        await spend(h, { conversationId: "c-default", user: "42", atMs: T0 + 1 }, [usage(10)]);
        await spend(h, { conversationId: "c-support", user: "42", accountName: "support", atMs: T0 + 2 }, [
          usage(100),
        ]);
        await spend(h, { conversationId: "c-sales", user: "42", accountName: "sales", atMs: T0 + 3 }, [
          usage(1000),
        ]);
        const of = async (principal: string) =>
          (await h.budgets.usageSince({ kind: "user", principal }, T0)).tokens;
        expect(await of("telegram:42")).toBe(10);
        expect(await of("telegram:support:42")).toBe(100);
        expect(await of("telegram:sales:42")).toBe(1000);
        // A surface's budget is the channel's, whichever account the runs came through.
        expect(
          (await h.budgets.usageSince({ kind: "surface", channel: "telegram", surface: "dm" }, T0)).tokens,
        ).toBe(1110);
      }),
      CONFORMANCE_TIMEOUT_MS,
    );

    test(
      "usage counts each run's recorded steps from its admission on; unknown counts stay unknown",
      withHarness(async (h) => {
        const user = { kind: "user", principal: "telegram:42" } as const;
        expect(await h.budgets.usageSince(user, T0)).toEqual({
          tokens: 0,
          tokensUnknownRuns: 0,
          costUsd: 0,
          costUnknownRuns: 0,
          runs: 0,
        });
        await spend(h, { conversationId: "a", user: "42", atMs: T0 }, [
          { inputTokens: 100, outputTokens: 20, costUsd: 0.5 },
          { inputTokens: 50, outputTokens: 10, costUsd: 0.25 },
        ]);
        // A step without a cost makes the run's cost unknown: never zero.
        await spend(h, { conversationId: "b", user: "42", atMs: T0 + 1000 }, [
          { inputTokens: 10, outputTokens: 5, costUsd: 1 },
          { inputTokens: 10, outputTokens: 5 },
        ]);
        await spend(
          h,
          { conversationId: "c", user: "7", channel: "discord", surface: "group", atMs: T0 + 2000 },
          [{ outputTokens: 9 }],
        );

        expect(await h.budgets.usageSince(user, T0)).toEqual({
          tokens: 210,
          tokensUnknownRuns: 0,
          costUsd: 0.75,
          costUnknownRuns: 1,
          runs: 2,
        });
        expect((await h.budgets.usageSince(user, T0 + 1)).runs).toBe(1);
        expect(await h.budgets.usageSince({ kind: "surface", channel: "discord", surface: "*" }, T0)).toEqual(
          {
            tokens: 0,
            tokensUnknownRuns: 1,
            costUsd: 0,
            costUnknownRuns: 1,
            runs: 1,
          },
        );
        expect((await h.budgets.usageSince({ kind: "surface", channel: "*", surface: "*" }, T0)).runs).toBe(
          3,
        );
        expect(
          (await h.budgets.usageSince({ kind: "surface", channel: "*", surface: "dm" }, T0)).tokens,
        ).toBe(210);

        const byUser = await h.budgets.usageBy("user", T0, 10);
        expect(byUser.map((r) => [r.key, r.tokens, r.runs])).toEqual([
          ["telegram:42", 210, 2],
          ["discord:7", 0, 1],
        ]);
        const byConversation = await h.budgets.usageBy("conversation", T0, 2);
        expect(byConversation.map((r) => [r.key, r.tokens])).toEqual([
          ["a", 180],
          ["b", 30],
        ]);
        expect(await h.budgets.conversationUsageSince("b", T0)).toEqual({
          tokens: 30,
          tokensUnknownRuns: 0,
          costUsd: 0,
          costUnknownRuns: 1,
          runs: 1,
        });
        expect((await h.budgets.conversationUsageSince("a", T0 + 1)).runs).toBe(0);
      }),
      CONFORMANCE_TIMEOUT_MS,
    );

    test(
      "a purge keeps the user's usage (forgetting refunds nothing) but no longer names the conversation",
      withHarness(async (h) => {
        await spend(h, { conversationId: "p", user: "42", atMs: T0 }, [{ inputTokens: 40, outputTokens: 2 }]);
        expect(await h.runtime.purgeConversation("p", { nowMs: T0 + 5 })).toEqual({ outcome: "purged" });
        expect((await h.budgets.usageSince({ kind: "user", principal: "telegram:42" }, T0)).tokens).toBe(42);
        expect(await h.budgets.usageBy("conversation", T0, 10)).toEqual([]);
        expect((await h.budgets.conversationUsageSince("p", T0)).runs).toBe(0);
      }),
      CONFORMANCE_TIMEOUT_MS,
    );

    test(
      "operators raise (merged field by field) and reset a scope, and clear it back to the config",
      withHarness(async (h) => {
        const scope = "user:telegram:42";
        expect(await h.budgets.override(scope)).toBeNull();
        const raised = await h.budgets.changeOverride(
          scope,
          { limits: { tokensPerDay: 500 } },
          "operator:ann",
          T0,
        );
        expect(raised).toEqual({
          scope,
          limits: { tokensPerDay: 500 },
          resetAtMs: null,
          updatedAtMs: T0,
          updatedBy: "operator:ann",
        });
        await h.budgets.changeOverride(scope, { limits: { costPerMonthUsd: 3 } }, "operator:bob", T0 + 1);
        const reset = await h.budgets.changeOverride(scope, { resetAtMs: T0 + 2 }, "operator:bob", T0 + 2);
        expect(reset).toEqual({
          scope,
          limits: { tokensPerDay: 500, costPerMonthUsd: 3 },
          resetAtMs: T0 + 2,
          updatedAtMs: T0 + 2,
          updatedBy: "operator:bob",
        });
        expect(await h.budgets.override(scope)).toEqual(reset);
        await h.budgets.changeOverride("surface:*:*", { resetAtMs: T0 }, "operator:ann", T0);
        expect((await h.budgets.listOverrides()).map((o) => o.scope)).toEqual(["surface:*:*", scope]);
        expect(await h.budgets.clearOverride(scope)).toBe(true);
        expect(await h.budgets.clearOverride(scope)).toBe(false);
        expect(await h.budgets.override(scope)).toBeNull();
      }),
      CONFORMANCE_TIMEOUT_MS,
    );
  });
}
