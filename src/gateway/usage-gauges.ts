import { budgetWindows } from "../budgets/rules.ts";
import type { BudgetStore } from "../budgets/store.ts";
import type { ProcessGauges } from "./metrics.ts";

/** How many users and conversations /metrics lists usage for (the heaviest first). */
const METRICS_USAGE_ROWS = 50;

/** Usage today and this month (in the budgets' zone) per user and per conversation, for /metrics. */
export async function usageGauges(
  store: BudgetStore,
  timezone: string,
  nowMs: number,
): Promise<NonNullable<ProcessGauges["usage"]>> {
  const windows = budgetWindows(nowMs, timezone);
  const [dayUsers, monthUsers, dayConversations, monthConversations] = await Promise.all([
    store.usageBy("user", windows.dayStartMs, METRICS_USAGE_ROWS),
    store.usageBy("user", windows.monthStartMs, METRICS_USAGE_ROWS),
    store.usageBy("conversation", windows.dayStartMs, METRICS_USAGE_ROWS),
    store.usageBy("conversation", windows.monthStartMs, METRICS_USAGE_ROWS),
  ]);
  return {
    user: { day: dayUsers, month: monthUsers },
    conversation: { day: dayConversations, month: monthConversations },
  };
}
