import type { ChildNode } from "../../children/tree.ts";
import { SwitchboardError } from "../../errors.ts";
import { OPERATOR_LIMITS } from "../../operator/limits.ts";
import type { RunDetail } from "../../operator/types.ts";
import { RUN_STATES } from "../../operator/validate.ts";
import type { RunRecord } from "../../runtime/store.ts";
import type { ToolCallSummary } from "../../runtime/tool-calls.ts";
import type { Usage } from "../../runtime/types.ts";
import { fields, isoTime, orDash, table } from "../format.ts";
import { type CommandSpec, type GroupSpec, HELP_OPTION, JSON_OPTION, SOURCE_OPTIONS } from "../spec.ts";
import { PAGE_OPTIONS, print, printPage, readPages, withOperator } from "./shared.ts";

export const RUNS_GROUP: GroupSpec = { name: "runs", summary: "agent runs, one per admitted input." };

function listRows(runs: readonly RunRecord[]): string {
  if (runs.length === 0) return "No runs match.\n";
  return table(
    ["ID", "STATE", "CONVERSATION", "CREATED", "FINISHED", "STEPS"],
    runs.map((r) => [
      r.id,
      r.state,
      r.conversationId,
      isoTime(r.createdAtMs),
      isoTime(r.finishedAtMs),
      String(r.steps),
    ]),
  );
}

/** Token counts and cost; a field the provider did not report is "unknown", never 0. */
export function describeUsage(usage: Usage, costComplete = true): string {
  const known = (value: number | undefined) => (value === undefined ? "unknown" : String(value));
  const cost = usage.costUsd === undefined || !costComplete ? "unknown" : `$${usage.costUsd}`;
  return `input ${known(usage.inputTokens)}, output ${known(usage.outputTokens)}, reasoning ${known(usage.reasoningTokens)}, cached input ${known(usage.cachedInputTokens)} tokens; cost ${cost}`;
}

/** The run's tool calls: what ran, how it ended, when and for how long. */
export function describeToolCalls(calls: readonly ToolCallSummary[]): string {
  if (calls.length === 0) return "Tool calls: none\n";
  return `Tool calls:\n${table(
    ["TOOL", "OUTCOME", "STARTED", "DURATION", "ATTEMPTS", "CALL ID"],
    calls.map((c) => [
      c.toolName,
      c.outcome,
      isoTime(c.startedAtMs),
      c.durationMs === null ? "-" : `${c.durationMs} ms`,
      String(c.attempts),
      c.toolCallId,
    ]),
  )}`;
}

/** The child agents a run started and theirs, indented under their parent. */
export function describeChildren(children: readonly ChildNode[]): string {
  if (children.length === 0) return "Child agents: none\n";
  const rows: string[][] = [];
  const add = (nodes: readonly ChildNode[], depth: number) => {
    for (const child of nodes) {
      rows.push([
        `${depth === 0 ? "" : `${"  ".repeat(depth - 1)}└ `}${child.handle}`,
        child.agent,
        child.state,
        child.run.state,
        String(child.run.steps),
        isoTime(child.run.startedAtMs),
        isoTime(child.run.finishedAtMs),
        orDash(child.resultState),
        child.run.id,
      ]);
      add(child.children, depth + 1);
    }
  };
  add(children, 0);
  return `Child agents:\n${table(
    ["HANDLE", "AGENT", "STATE", "RUN STATE", "STEPS", "STARTED", "FINISHED", "RESULT", "RUN"],
    rows,
  )}`;
}

function describeRun(shown: RunDetail): string {
  const { run } = shown;
  return `${fields([
    ["id", run.id],
    ["state", run.state],
    ["conversation", run.conversationId],
    ["priority", run.priority],
    ["policy", run.policy],
    ["queue seq", String(run.queueSeq)],
    ["inputs", run.inputMessageIds.join(", ")],
    ["owner", orDash(run.owner)],
    ["stop reason", orDash(run.stopReason)],
    ["absorbed into", orDash(run.absorbedInto)],
    ...(shown.childOf
      ? ([
          [
            "child agent",
            `${shown.childOf.handle} (${shown.childOf.agent}), started by run ${shown.childOf.parentRunId}`,
          ],
        ] as const)
      : []),
    ["error", orDash(run.error)],
    ["steps", String(run.steps)],
    ["usage", describeUsage(shown.usage, run.costComplete)],
    ["created", isoTime(run.createdAtMs)],
    ["started", isoTime(run.startedAtMs)],
    ["finished", isoTime(run.finishedAtMs)],
  ])}\n${describeToolCalls(shown.toolCalls)}${describeChildren(shown.children)}Answer:\n${shown.answerText === "" ? "(none yet)" : shown.answerText}\n`;
}

export const RUNS_COMMANDS: CommandSpec[] = [
  {
    path: ["runs", "list"],
    synopsis: "runs list [--state S] [--conversation C] [--limit N] [--cursor C | --all] [--json]",
    summary: "List runs, newest first.",
    args: [],
    options: {
      state: { type: "string", valueName: "S", description: `Only this state: ${RUN_STATES.join(", ")}.` },
      conversation: { type: "string", valueName: "C", description: "Only this conversation id." },
      limit: {
        type: "string",
        valueName: "N",
        description: `At most N runs per page (1-${OPERATOR_LIMITS.runs.max}). Default ${OPERATOR_LIMITS.runs.default}.`,
      },
      ...PAGE_OPTIONS,
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const state = command.choice("state", RUN_STATES);
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.runs.max });
      const conversationId = command.string("conversation");
      const page = await withOperator(command, io, (service) =>
        readPages(command, (cursor) => service.runs.list({ state, conversationId, cursor, limit })),
      );
      printPage(command, io, page, listRows);
    },
  },
  {
    path: ["runs", "show"],
    synopsis: "runs show ID [--json]",
    summary:
      "Show one run: state, owner, usage, its tool calls (timing, outcome), the child agents it started (the tree) and its answer text.",
    args: [{ name: "ID", description: "Run id (run_…)." }],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const shown = await withOperator(command, io, (service) => service.runs.show(id));
      if (!shown) {
        throw new SwitchboardError("not_found", `No run ${id}. List runs with \`switchboard runs list\`.`);
      }
      print(command, io, shown, describeRun);
    },
  },
];
