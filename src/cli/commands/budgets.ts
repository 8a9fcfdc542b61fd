import { describeLimit } from "../../budgets/rules.ts";
import type { UsageRow } from "../../budgets/store.ts";
import type { BudgetOverview, BudgetScopeStatus } from "../../operator/types.ts";
import { isoTime, table } from "../format.ts";
import { actorOf } from "../options.ts";
import {
  ACTOR_OPTION,
  type CommandSpec,
  type GroupSpec,
  HELP_OPTION,
  JSON_OPTION,
  type ParsedCommand,
  SOURCE_OPTIONS,
} from "../spec.ts";
import { print, withOperator } from "./shared.ts";

export const BUDGETS_GROUP: GroupSpec = {
  name: "budgets",
  summary: "token and cost budgets (SWITCHBOARD_CONFIG budgets): usage, raise, reset.",
};

const SCOPE_ARG = {
  name: "SCOPE",
  description:
    "user:<channel>:<user id> (e.g. user:telegram:12345) or surface:<channel>:<surface> (e.g. surface:*:dm).",
};

const money = (usd: number) => `$${usd.toFixed(2)}`;

function scopeText(s: BudgetScopeStatus): string {
  const lines = [`${s.scope}${s.refused ? " (refusing: a limit is reached)" : ""}`];
  if (s.limits.length === 0) lines.push("  no limits (none configured or raised)");
  for (const l of s.limits) {
    const used = `${l.incomplete ? "at least " : ""}${l.field.startsWith("cost") ? money(l.used) : l.used.toLocaleString("en")}`;
    const left =
      l.remaining === null
        ? `remaining unknown (a model reported no ${l.field.startsWith("cost") ? "cost" : "token count"})`
        : `${l.field.startsWith("cost") ? money(l.remaining) : l.remaining.toLocaleString("en")} left`;
    lines.push(
      `  ${describeLimit(l.field, l.limit)}: ${used} used, ${left}, resets ${isoTime(l.resetsAtMs)}`,
    );
  }
  if (s.override) {
    const raised = s.override.limits ? `raised ${JSON.stringify(s.override.limits)}` : "";
    const reset = s.override.resetAtMs === null ? "" : `counting from ${isoTime(s.override.resetAtMs)}`;
    lines.push(`  operator: ${[raised, reset].filter(Boolean).join("; ")} (by ${s.override.updatedBy})`);
  }
  return `${lines.join("\n")}\n`;
}

function usageTable(rows: readonly UsageRow[], what: string): string {
  if (rows.length === 0) return `No usage by ${what}.\n`;
  return table(
    [what.toUpperCase(), "RUNS", "TOKENS", "COST"],
    rows.map((r) => [
      r.key,
      String(r.runs),
      `${r.tokens.toLocaleString("en")}${r.tokensUnknownRuns > 0 ? ` (+${r.tokensUnknownRuns} runs unreported)` : ""}`,
      r.costUnknownRuns > 0
        ? `≥ ${money(r.costUsd)} (${r.costUnknownRuns} runs unreported)`
        : money(r.costUsd),
    ]),
  );
}

function overview(o: BudgetOverview): string {
  const scopes =
    o.scopes.length === 0 ? "No surface budgets or operator changes.\n" : o.scopes.map(scopeText).join("");
  return [
    `Budgets (days and months in ${o.timezone}):`,
    scopes,
    "This month, per user:",
    usageTable(o.usage.user.month, "user"),
    "This month, per conversation:",
    usageTable(o.usage.conversation.month, "conversation"),
  ].join("\n");
}

function limitsOf(command: ParsedCommand) {
  const number = (name: string): number | undefined => {
    const raw = command.string(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || !(value > 0))
      throw command.usageError(`--${name} must be a positive number, not '${raw}'.`);
    return value;
  };
  const limits = {
    tokensPerDay: number("tokens-per-day"),
    tokensPerMonth: number("tokens-per-month"),
    costPerDayUsd: number("cost-per-day-usd"),
    costPerMonthUsd: number("cost-per-month-usd"),
  };
  if (Object.values(limits).every((v) => v === undefined))
    throw command.usageError(
      "Give at least one limit: --tokens-per-day, --tokens-per-month, --cost-per-day-usd or --cost-per-month-usd.",
    );
  return Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
}

const LIMIT_OPTIONS = {
  "tokens-per-day": { type: "string", valueName: "N", description: "Tokens (input + output) a day." },
  "tokens-per-month": { type: "string", valueName: "N", description: "Tokens a month." },
  "cost-per-day-usd": { type: "string", valueName: "USD", description: "Model cost a day, in US dollars." },
  "cost-per-month-usd": {
    type: "string",
    valueName: "USD",
    description: "Model cost a month, in US dollars.",
  },
} as const;

export const BUDGETS_COMMANDS: CommandSpec[] = [
  {
    path: ["budgets", "show"],
    synopsis: "budgets show [--json]",
    summary:
      "Surface budgets and operator changes with what remains, and this month's usage per user and per conversation.",
    args: [],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      print(command, io, await withOperator(command, io, (s) => s.budgets.show()), overview);
    },
  },
  {
    path: ["budgets", "status"],
    synopsis: "budgets status SCOPE [--json]",
    summary: "One scope's limits in force, usage, what remains and when each resets.",
    args: [SCOPE_ARG],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const scope = command.arg(0);
      print(command, io, await withOperator(command, io, (s) => s.budgets.status(scope)), scopeText);
    },
  },
  {
    path: ["budgets", "raise"],
    synopsis:
      "budgets raise SCOPE [--tokens-per-day N] [--tokens-per-month N] [--cost-per-day-usd USD] [--cost-per-month-usd USD]",
    summary: "Set a scope's limits over the configured ones (they apply from the next message on).",
    args: [SCOPE_ARG],
    options: { ...LIMIT_OPTIONS, ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const scope = command.arg(0);
      const limits = limitsOf(command);
      const actor = actorOf(command, io.env);
      const status = await withOperator(command, io, (s) => s.budgets.raise(scope, limits, actor));
      print(command, io, status, scopeText);
    },
  },
  {
    path: ["budgets", "reset"],
    synopsis: "budgets reset SCOPE [--actor NAME]",
    summary: "Start the scope's current day and month afresh: usage before now stops counting.",
    args: [SCOPE_ARG],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const scope = command.arg(0);
      const actor = actorOf(command, io.env);
      print(command, io, await withOperator(command, io, (s) => s.budgets.reset(scope, actor)), scopeText);
    },
  },
  {
    path: ["budgets", "clear"],
    synopsis: "budgets clear SCOPE [--actor NAME]",
    summary: "Drop a scope's raised limits and reset: back to the configuration.",
    args: [SCOPE_ARG],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const scope = command.arg(0);
      const actor = actorOf(command, io.env);
      print(command, io, await withOperator(command, io, (s) => s.budgets.clear(scope, actor)), scopeText);
    },
  },
];
