/**
 * The budget scenario of the end-to-end test: a per-user token budget exhausted mid-day refuses
 * (one reply, no model call, the input kept), resets at the day's boundary in the budget's zone
 * (the gateway restarted "the next day" with SWITCHBOARD_TEST_START_MS), and an operator's reset,
 * then a raise, through the API let the user write again. Nothing in it depends on the platform:
 * it runs on one (budgets-telegram.test.ts).
 */
import { Database } from "bun:sqlite";
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import { runCliJson } from "./cli.ts";
import type { GatewayProcess } from "./gateway-process.ts";

export const BUDGET_OPERATOR_TOKEN = "operator-token-budget-0123456789";
/** Noon on Tuesday 10 March 2026 in Berlin (11:00 UTC), then 30 s after the next local midnight. */
const DAY_ONE_MS = Date.parse("2026-03-10T11:00:00Z");
const DAY_TWO_MS = Date.parse("2026-03-10T23:00:30Z");
/** Each spend costs 350 + 50 tokens; the day allows 1,000, so the third still passes and the fourth is refused. */
const TOKENS_PER_DAY = 1000;

export interface BudgetChat {
  /** `<channel>:<user id>`, as budgets name the user. */
  principal: string;
  /** Sends `text` as the user; resolves with the first bot message containing `replyContains`. */
  say(text: string, replyContains: string): Promise<string>;
}

export interface BudgetScenario {
  dir: string;
  llm: FakeLlmServer;
  chat: BudgetChat;
  /** The platform's gateway environment with `extra` added. */
  env(extra: Record<string, string>): Record<string, string>;
  startGateway(env: Record<string, string>): Promise<GatewayProcess>;
}

export function writeBudgetConfig(dir: string, surfaces: Record<string, unknown>): string {
  const file = join(dir, "budgets.json");
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      surfaces,
      budgets: { timezone: "Europe/Berlin", perUser: { tokensPerDay: TOKENS_PER_DAY } },
    }),
  );
  return file;
}

export async function runBudgetScenario(s: BudgetScenario): Promise<void> {
  s.llm.addRules(
    Array.from({ length: 13 }, (_, i) => ({
      match: { lastUserContains: `spend #${i + 1}.` },
      reply: {
        kind: "text" as const,
        text: `spent #${i + 1}.`,
        usage: { promptTokens: 350, completionTokens: 50 },
      },
    })),
  );
  const spend = (n: number) => s.chat.say(`spend #${n}.`, `spent #${n}.`);
  const env = (startMs: number) =>
    s.env({ SWITCHBOARD_TEST_START_MS: String(startMs), SWITCHBOARD_OPERATOR_TOKEN: BUDGET_OPERATOR_TOKEN });
  const dbPath = s.env({}).SWITCHBOARD_DB!;

  let gateway = await s.startGateway(env(DAY_ONE_MS));
  try {
    await spend(1);
    await spend(2);
    await spend(3);
    const refusal = await s.chat.say("spend #4.", "is used up");
    expect(refusal).toContain("your budget of 1,000 tokens a day is used up");
    expect(refusal).toContain("It resets Wed 2026-03-11 00:00 (Europe/Berlin)");
    // No model call, and the input is kept, recorded as refused for budget.
    expect(s.llm.requestsContaining("spend #4.")).toHaveLength(0);
    const db = new Database(dbPath, { readonly: true });
    const refused = db
      .query("SELECT outcome, payload FROM ingress_receipts WHERE outcome = 'refused:budget'")
      .all() as Array<{ outcome: string; payload: string }>;
    db.close();
    expect(refused.map((r) => JSON.parse(r.payload).text)).toEqual(["spend #4."]);

    const status = await s.chat.say("/status", "Your budget:");
    expect(status).toContain(
      "Your budget: 1,200 of 1,000 tokens a day used, 0 left; resets Wed 2026-03-11 00:00",
    );

    // Usage per user and per conversation, in the API and in /metrics.
    const headers = { authorization: `Bearer ${BUDGET_OPERATOR_TOKEN}` };
    const overview = (await (await fetch(`${gateway.url}/api/budgets`, { headers })).json()) as {
      usage: Record<
        "user" | "conversation",
        Record<"day", Array<{ key: string; tokens: number; runs: number }>>
      >;
    };
    expect(overview.usage.user.day).toEqual([
      expect.objectContaining({ key: s.chat.principal, tokens: 1200, runs: 3 }),
    ]);
    expect(overview.usage.conversation.day).toEqual([expect.objectContaining({ tokens: 1200, runs: 3 })]);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toContain(`switchboard_usage_tokens{user="${s.chat.principal}",period="day"} 1200`);
    expect(metrics).toContain(
      `switchboard_usage_tokens{conversation="${overview.usage.conversation.day[0]!.key}",period="day"} 1200`,
    );
  } finally {
    await gateway.kill("SIGTERM");
  }

  // The next day in Berlin: the day's budget starts afresh.
  gateway = await s.startGateway(env(DAY_TWO_MS));
  try {
    await spend(5);
    await spend(6);
    await spend(7);
    const again = await s.chat.say("spend #8.", "It resets Thu 2026-03-12 00:00");
    expect(again).toContain("is used up");
    expect(s.llm.requestsContaining("spend #8.")).toHaveLength(0);

    const scope = `user:${s.chat.principal}`;
    const api = { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_OPERATOR_TOKEN: BUDGET_OPERATOR_TOKEN };
    type Changed = { refused: boolean; limits: Array<{ field: string; limit: number; used: number }> };
    // A reset counts usage afresh under the same limit.
    const reset = await runCliJson<Changed>(["budgets", "reset", scope, "--actor", "ann"], api);
    expect(reset.refused).toBe(false);
    expect(reset.limits).toEqual([
      expect.objectContaining({ field: "tokensPerDay", limit: TOKENS_PER_DAY, used: 0 }),
    ]);
    await spend(9);
    expect(s.llm.requestsContaining("spend #9.")).toHaveLength(1);
    await spend(10);
    await spend(11);
    const refusedAgain = await s.chat.say("spend #12.", "It resets Thu 2026-03-12 00:00");
    expect(refusedAgain).toContain("is used up");
    // A raise keeps the usage and lifts the limit.
    const raised = await runCliJson<Changed>(
      ["budgets", "raise", scope, "--tokens-per-day", "5000", "--actor", "ann"],
      api,
    );
    expect(raised.refused).toBe(false);
    expect(raised.limits).toEqual([
      expect.objectContaining({ field: "tokensPerDay", limit: 5000, used: 1200 }),
    ]);
    await spend(13);
    expect(s.llm.requestsContaining("spend #13.")).toHaveLength(1);
  } finally {
    await gateway.kill("SIGTERM");
  }
}
