import { describe, expect, test } from "bun:test";
import { budgetScopes, costOnlyBudgetProblem } from "../../src/budgets/config.ts";
import {
  budgetVerdict,
  budgetWindows,
  countingFrom,
  effectiveLimits,
  mergeOverride,
  NO_USAGE,
  refusalText,
  statusLines,
} from "../../src/budgets/rules.ts";
import { isSwitchboardError } from "../../src/errors.ts";
import { configWith, fileConfig } from "../gateway/support/config.ts";

const at = (iso: string) => Date.parse(iso);

describe("budget windows in a time zone", () => {
  test("the calendar day and month around an instant, at local midnights", () => {
    // 23:30 UTC on 31 Jan is already 1 Feb in Berlin (UTC+1).
    expect(budgetWindows(at("2026-01-31T23:30:00Z"), "Europe/Berlin")).toEqual({
      dayStartMs: at("2026-01-31T23:00:00Z"),
      dayEndMs: at("2026-02-01T23:00:00Z"),
      monthStartMs: at("2026-01-31T23:00:00Z"),
      monthEndMs: at("2026-02-28T23:00:00Z"),
    });
    expect(budgetWindows(at("2026-12-31T12:00:00Z"), "UTC")).toEqual({
      dayStartMs: at("2026-12-31T00:00:00Z"),
      dayEndMs: at("2027-01-01T00:00:00Z"),
      monthStartMs: at("2026-12-01T00:00:00Z"),
      monthEndMs: at("2027-01-01T00:00:00Z"),
    });
  });

  test("a day across a DST change is 23 hours long", () => {
    const w = budgetWindows(at("2026-03-29T12:00:00Z"), "Europe/Berlin");
    expect(w.dayEndMs - w.dayStartMs).toBe(23 * 3_600_000);
    expect(w.dayStartMs).toBe(at("2026-03-28T23:00:00Z"));
  });

  test("an operator reset inside a window moves where that window counts from", () => {
    const w = budgetWindows(at("2026-05-10T12:00:00Z"), "UTC");
    expect(countingFrom(w, null)).toEqual({ dayMs: w.dayStartMs, monthMs: w.monthStartMs });
    expect(countingFrom(w, at("2026-05-10T08:00:00Z"))).toEqual({
      dayMs: at("2026-05-10T08:00:00Z"),
      monthMs: at("2026-05-10T08:00:00Z"),
    });
    expect(countingFrom(w, at("2026-04-10T08:00:00Z"))).toEqual({
      dayMs: w.dayStartMs,
      monthMs: w.monthStartMs,
    });
  });
});

describe("budget verdict", () => {
  const windows = budgetWindows(at("2026-05-10T12:00:00Z"), "UTC");
  const used = (tokens: number, costUsd = 0, unknownCost = 0) => ({
    ...NO_USAGE,
    tokens,
    costUsd,
    costUnknownRuns: unknownCost,
    runs: 1,
  });

  test("under every limit: allowed, with what remains and when each resets", () => {
    const v = budgetVerdict(
      { tokensPerDay: 1000, costPerMonthUsd: 5 },
      { day: used(400, 1), month: used(900, 2) },
      windows,
    );
    expect(v).toEqual({
      kind: "allowed",
      limits: [
        {
          field: "tokensPerDay",
          limit: 1000,
          used: 400,
          incomplete: false,
          remaining: 600,
          resetsAtMs: windows.dayEndMs,
        },
        {
          field: "costPerMonthUsd",
          limit: 5,
          used: 2,
          incomplete: false,
          remaining: 3,
          resetsAtMs: windows.monthEndMs,
        },
      ],
    });
  });

  test("a limit reached refuses; with two reached, the later reset is named", () => {
    const day = budgetVerdict({ tokensPerDay: 1000 }, { day: used(1000), month: used(1000) }, windows);
    expect(day).toMatchObject({
      kind: "refused",
      reason: "reached",
      exceeded: { field: "tokensPerDay", remaining: 0 },
    });
    const both = budgetVerdict(
      { tokensPerDay: 1000, tokensPerMonth: 2000 },
      { day: used(1500), month: used(2500) },
      windows,
    );
    expect(both).toMatchObject({
      kind: "refused",
      exceeded: { field: "tokensPerMonth", resetsAtMs: windows.monthEndMs },
    });
  });

  test("unavailable cost never counts as zero: a cost-only budget refuses, a token limit stands in", () => {
    const costOnly = budgetVerdict(
      { costPerDayUsd: 1 },
      { day: used(10, 0.1, 1), month: used(10, 0.1, 1) },
      windows,
    );
    expect(costOnly).toMatchObject({
      kind: "refused",
      reason: "cost_unavailable",
      exceeded: { field: "costPerDayUsd", incomplete: true, remaining: null },
    });
    const withTokens = budgetVerdict(
      { costPerDayUsd: 1, tokensPerDay: 100 },
      { day: used(10, 0.1, 1), month: used(10, 0.1, 1) },
      windows,
    );
    expect(withTokens.kind).toBe("allowed");
    // What is known already exceeds the limit: refused as reached, whatever is unknown.
    const known = budgetVerdict(
      { costPerDayUsd: 1, tokensPerDay: 100 },
      { day: used(10, 2, 1), month: used(10, 2, 1) },
      windows,
    );
    expect(known).toMatchObject({ kind: "refused", reason: "reached" });
  });

  test("the refusal names the limit and when it resets, in the budget's zone", () => {
    const v = budgetVerdict({ tokensPerDay: 200_000 }, { day: used(200_000), month: used(200_000) }, windows);
    if (v.kind !== "refused") throw new Error("expected a refusal");
    expect(refusalText(v, "your budget", "UTC")).toBe(
      "I can't answer this: your budget of 200,000 tokens a day is used up. It resets Mon 2026-05-11 00:00 (UTC). I did not read this message; please send it again then.",
    );
  });

  test("raised limits override the configured ones field by field; a reset replaces the earlier one", () => {
    expect(effectiveLimits({ tokensPerDay: 10, costPerMonthUsd: 5 }, { tokensPerDay: 50 })).toEqual({
      tokensPerDay: 50,
      costPerMonthUsd: 5,
    });
    expect(effectiveLimits(undefined, null)).toEqual({});
    const first = mergeOverride(null, { limits: { tokensPerDay: 50 } });
    expect(first).toEqual({ limits: { tokensPerDay: 50 }, resetAtMs: null });
    expect(mergeOverride(first, { resetAtMs: 7 })).toEqual({ limits: { tokensPerDay: 50 }, resetAtMs: 7 });
    expect(mergeOverride({ limits: null, resetAtMs: 7 }, { limits: { costPerDayUsd: 1 } })).toEqual({
      limits: { costPerDayUsd: 1 },
      resetAtMs: 7,
    });
  });
});

describe("budget configuration", () => {
  test("a message gets the per-user budget and each matching per-surface one", () => {
    const scopes = budgetScopes(
      {
        perUser: { tokensPerDay: 10 },
        perSurface: { "telegram:*": { tokensPerMonth: 5 }, "discord:dm": { tokensPerDay: 1 } },
      },
      { channel: "telegram", surface: "dm", principal: "telegram:42" },
    );
    expect(scopes.map((s) => [s.scope, s.filter])).toEqual([
      ["user:telegram:42", { kind: "user", principal: "telegram:42" }],
      ["surface:telegram:*", { kind: "surface", channel: "telegram", surface: "*" }],
    ]);
    expect(budgetScopes(undefined, { channel: "telegram", surface: "dm", principal: "telegram:42" })).toEqual(
      [],
    );
  });

  test("a cost-only budget with a model that reports no cost is a configuration error", () => {
    const budgets = { perUser: { costPerMonthUsd: 5 } };
    expect(costOnlyBudgetProblem(budgets, ["openrouter:a/b"])).toBeNull();
    expect(costOnlyBudgetProblem(budgets, ["openrouter:a/b", "openai-compatible:llama"])).toContain(
      "budgets.perUser limits only cost, but openai-compatible:llama reports no cost",
    );
    expect(
      costOnlyBudgetProblem({ perUser: { costPerMonthUsd: 5, tokensPerDay: 9 } }, ["offline"]),
    ).toBeNull();
  });
});

describe("SWITCHBOARD_CONFIG budgets", () => {
  const refusal = (fileJson: unknown): string => {
    try {
      configWith({}, fileJson);
    } catch (error) {
      if (isSwitchboardError(error, "config_invalid")) return error.message;
      throw error;
    }
    throw new Error(`expected config_invalid for ${JSON.stringify(fileJson)}`);
  };

  test("the issue's example parses; the zone defaults to SWITCHBOARD_TIMEZONE", () => {
    const file = fileConfig({ budgets: { perUser: { tokensPerDay: 200000, costPerMonthUsd: 5 } } });
    expect(file.budgets).toEqual({ perUser: { tokensPerDay: 200000, costPerMonthUsd: 5 } });
  });

  test("refusals name the key and what is wrong", () => {
    expect(refusal({ version: 1, budgets: { perUser: {} } })).toContain("budgets.perUser");
    expect(refusal({ version: 1, budgets: { perUser: {} } })).toContain("set at least one of tokensPerDay");
    expect(refusal({ version: 1, budgets: { perUser: { tokensPerDay: -5 } } })).toContain(
      "budgets.perUser.tokensPerDay",
    );
    expect(refusal({ version: 1, budgets: { perUser: { tokensPerWeek: 5 } } })).toContain("tokensPerWeek");
    expect(
      refusal({ version: 1, budgets: { timezone: "Mars/Olympus", perUser: { tokensPerDay: 5 } } }),
    ).toContain("budgets.timezone");
    expect(refusal({ version: 1, budgets: { perSurface: { "irc:dm": { tokensPerDay: 5 } } } })).toContain(
      "budgets.perSurface",
    );
  });
});

test("/status lines say what is used, what is left and when it resets; unknown stays unknown", () => {
  const windows = budgetWindows(at("2026-05-10T12:00:00Z"), "UTC");
  const v = budgetVerdict(
    { tokensPerDay: 1000, costPerMonthUsd: 5 },
    {
      day: { ...NO_USAGE, tokens: 250, runs: 1 },
      month: { ...NO_USAGE, tokens: 250, costUsd: 1.5, costUnknownRuns: 1, runs: 2 },
    },
    windows,
  );
  expect(statusLines(v.limits, "your budget", "UTC")).toEqual([
    "Your budget: 250 of 1,000 tokens a day used, 750 left; resets Mon 2026-05-11 00:00",
    "Your budget: at least $1.50 of $5.00 a month used, remaining unknown (a model reported no cost); resets Mon 2026-06-01 00:00",
  ]);
});
