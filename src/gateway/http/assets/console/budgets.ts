/**
 * Budgets: each limit in force (surfaces, operator changes) with what it used and when it resets,
 * then usage today and this month per user (with the user's own budget) and per conversation.
 * The same data as `switchboard budgets show`.
 */
import type { UsageTotals } from "../../../../budgets/rules.ts";
import type { UsageRow } from "../../../../budgets/store.ts";
import type { BudgetOverview, BudgetScopeStatus, ConversationUsage } from "../../../../operator/types.ts";
import { formatTime, h, idCell } from "../dom.js";
import { api } from "./api.js";
import { href, type Route } from "./router.js";
import { badge, table } from "./ui.js";

type Period = "day" | "month";
type LimitStatus = BudgetScopeStatus["limits"][number];

const PERIOD_LABEL: Record<Period, string> = { day: "today", month: "this month" };
const DAY_FIELDS = ["tokensPerDay", "costPerDayUsd"];

export async function showBudgets(view: HTMLElement, _route: Route): Promise<void> {
  const o = await api<BudgetOverview>("/api/budgets");
  const limitRows = o.scopes.flatMap((s) =>
    s.limits.map((l) =>
      h(
        "tr",
        { "data-scope": s.scope, "data-field": l.field },
        idCell(s.scope),
        h("td", {}, limitText(l)),
        h("td", { class: "num" }, usedText(l)),
        h("td", { class: "num" }, leftText(l)),
        h("td", { class: "time" }, formatTime(l.resetsAtMs)),
        h("td", {}, badge(l.used >= l.limit || (s.refused && l.remaining === null) ? "refusing" : "ok")),
      ),
    ),
  );
  const userBudget = new Map(o.users.map((s) => [s.scope, s]));
  const userRows = usageRows(o, "user", (row, period) => {
    const limits = (userBudget.get(`user:${row.key}`)?.limits ?? []).filter(
      (l) => DAY_FIELDS.includes(l.field) === (period === "day"),
    );
    return [
      idCell(row.key),
      ...totalsCells(row, period),
      h(
        "td",
        { class: "limit" },
        limits.length === 0 ? "—" : limits.map((l) => `${limitText(l)} · ${leftText(l)}`).join("; "),
      ),
      h("td", { class: "time" }, formatTime(o.periods[period].endMs)),
    ];
  });
  const conversationRows = usageRows(o, "conversation", (row, period) => [
    h(
      "td",
      { class: "mono id" },
      h("a", { href: href({ tab: "conversations", id: row.key }), title: row.key }, row.key),
    ),
    ...totalsCells(row, period),
    h("td", { class: "time" }, formatTime(o.periods[period].endMs)),
  ]);
  view.replaceChildren(
    h("h2", {}, "Budgets"),
    h(
      "p",
      { class: "muted", id: "budget-periods" },
      `Days and months in ${o.timezone}: today resets ${formatTime(o.periods.day.endMs)}, this month ${formatTime(o.periods.month.endMs)}. Raise, reset or clear a budget with `,
      h("code", {}, "switchboard budgets"),
      ".",
    ),
    h("h3", {}, "Limits"),
    table(
      ["Scope", "Limit", "Used", "Left", "Resets", "State"],
      limitRows,
      "No surface budgets or operator changes.",
    ),
    h("h3", {}, "Per user"),
    table(
      ["User", "Period", "Runs", "Tokens", "Cost", "Their budget", "Resets"],
      userRows,
      "No usage this month.",
    ),
    h("h3", {}, "Per conversation"),
    h(
      "p",
      { class: "muted" },
      "Budgets limit users and surfaces; a conversation's runs count toward its user's.",
    ),
    table(
      ["Conversation", "Period", "Runs", "Tokens", "Cost", "Resets"],
      conversationRows,
      "No usage this month.",
    ),
  );
}

/** A row per user or conversation and period (today, then this month), heaviest first. */
function usageRows(
  o: BudgetOverview,
  group: "user" | "conversation",
  cells: (row: UsageRow, period: Period) => HTMLElement[],
): HTMLElement[] {
  const byKey = new Map<string, Partial<Record<Period, UsageRow>>>();
  for (const period of ["month", "day"] as const)
    for (const row of o.usage[group][period]) byKey.set(row.key, { ...byKey.get(row.key), [period]: row });
  return [...byKey.values()].flatMap((rows) =>
    (["day", "month"] as const).flatMap((period) => {
      const row = rows[period];
      return row
        ? [h("tr", { [`data-${group}`]: row.key, "data-period": period }, ...cells(row, period))]
        : [];
    }),
  );
}

function totalsCells(totals: UsageTotals, period: Period): HTMLElement[] {
  return [
    h("td", {}, PERIOD_LABEL[period]),
    h("td", { class: "num" }, String(totals.runs)),
    h("td", { class: "num" }, tokensText(totals)),
    h("td", { class: "num" }, costText(totals)),
  ];
}

/** "1,240"; "≥ 1,240" with a note when some run reported no count (unknown is not zero). */
function tokensText(t: UsageTotals): HTMLElement {
  const n = t.tokens.toLocaleString("en");
  return t.tokensUnknownRuns > 0
    ? h("span", { title: `${t.tokensUnknownRuns} runs reported no token count` }, `≥ ${n}`)
    : h("span", {}, n);
}

function costText(t: UsageTotals): HTMLElement {
  const usd = `$${t.costUsd.toFixed(4)}`;
  return t.costUnknownRuns > 0
    ? h("span", { title: `${t.costUnknownRuns} runs reported no cost` }, `≥ ${usd}`)
    : h("span", {}, usd);
}

const isCost = (l: LimitStatus) => l.field.startsWith("cost");
const amount = (l: LimitStatus, value: number) =>
  isCost(l) ? `$${value.toFixed(2)}` : Math.round(value).toLocaleString("en");

/** "200,000 tokens a day", "$5.00 a month". */
function limitText(l: LimitStatus): string {
  const per = DAY_FIELDS.includes(l.field) ? "a day" : "a month";
  return `${amount(l, l.limit)}${isCost(l) ? "" : " tokens"} ${per}`;
}

function usedText(l: LimitStatus): string {
  return `${l.incomplete ? "≥ " : ""}${amount(l, l.used)}`;
}

function leftText(l: LimitStatus): string {
  return l.remaining === null ? "left unknown" : `${amount(l, l.remaining)} left`;
}

/** A conversation's usage today and this month, for its page. */
export function conversationUsageLine(usage: ConversationUsage): HTMLElement {
  const part = (period: Period) => {
    const t = usage[period];
    return `${PERIOD_LABEL[period]} ${tokensLabel(t)} tokens, ${costLabel(t)} in ${t.runs} runs (resets ${formatTime(t.endMs)})`;
  };
  return h(
    "p",
    { class: "muted", id: "conversation-usage" },
    `Usage ${part("day")}; ${part("month")}. `,
    h("a", { href: href({ tab: "budgets" }) }, "all budgets"),
  );
}

const tokensLabel = (t: UsageTotals) =>
  `${t.tokensUnknownRuns > 0 ? "≥ " : ""}${t.tokens.toLocaleString("en")}`;
const costLabel = (t: UsageTotals) => `${t.costUnknownRuns > 0 ? "≥ " : ""}$${t.costUsd.toFixed(4)}`;
