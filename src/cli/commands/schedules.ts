import type { Occurrence, Schedule } from "../../../schedules/types.ts";
import { OPERATOR_LIMITS } from "../../operator/limits.ts";
import { duration, isoTime, orDash, preview, table } from "../format.ts";
import type { CliIo } from "../spec.ts";
import {
  type CommandSpec,
  type GroupSpec,
  HELP_OPTION,
  JSON_OPTION,
  type ParsedCommand,
  SOURCE_OPTIONS,
} from "../spec.ts";
import { print, withOperator } from "./shared.ts";

export const SCHEDULES_GROUP: GroupSpec = {
  name: "schedules",
  summary: "prompts the agent runs at set times.",
};

const ID_ARG = { name: "ID", description: "Schedule id (sch_…)." };

/** `at 2026-03-01T10:00:00Z`, `cron 0 8 * * * (Europe/Berlin)`, `every 7d (UTC)`. */
export function describeTiming(schedule: Schedule): string {
  switch (schedule.spec.type) {
    case "at":
      return `at ${isoTime(schedule.spec.atMs)}`;
    case "cron":
      return `cron ${schedule.spec.expression} (${schedule.timezone})`;
    case "interval":
      return `every ${duration(schedule.spec.intervalMs)} (${schedule.timezone})`;
  }
}

function listRows(schedules: readonly Schedule[]): string {
  if (schedules.length === 0) return "No schedules match (ended ones are shown with --all).\n";
  return table(
    ["ID", "STATE", "BY", "WHEN", "NEXT", "CONVERSATION", "PROMPT"],
    schedules.map((s) => [
      s.id,
      s.state,
      s.createdBy,
      describeTiming(s),
      isoTime(s.nextAtMs),
      s.conversationId,
      preview(s.prompt, 40),
    ]),
  );
}

function occurrenceRows(occurrences: readonly Occurrence[]): string {
  if (occurrences.length === 0) return "This schedule has not fired yet.\n";
  return table(
    ["SLOT", "STATE", "ATTEMPTS", "LATE", "RUN", "ERROR"],
    occurrences.map((o) => [
      isoTime(o.scheduledForMs),
      o.state,
      String(o.attempts),
      o.lateByMs === null ? "-" : duration(o.lateByMs),
      orDash(o.runId),
      preview(o.lastError ?? "", 50),
    ]),
  );
}

function changed(schedule: Schedule): string {
  const next = schedule.nextAtMs === null ? "" : `; next slot ${isoTime(schedule.nextAtMs)}`;
  return `Schedule ${schedule.id} is now ${schedule.state}${next}.\n`;
}

function stateChange(verb: "pause" | "resume" | "cancel", summary: string): CommandSpec {
  return {
    path: ["schedules", verb],
    synopsis: `schedules ${verb} ID [--json]`,
    summary,
    args: [ID_ARG],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command: ParsedCommand, io: CliIo) {
      const id = command.arg(0);
      const schedule = await withOperator(command, io, (service) => service.schedules[verb](id));
      print(command, io, schedule, changed);
    },
  };
}

export const SCHEDULES_COMMANDS: CommandSpec[] = [
  {
    path: ["schedules", "list"],
    synopsis: "schedules list [--conversation C] [--all] [--json]",
    summary: "List active and paused schedules of every conversation, oldest first.",
    args: [],
    options: {
      conversation: { type: "string", valueName: "C", description: "Only this conversation id." },
      all: { type: "boolean", description: "Include cancelled, completed and failed schedules." },
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const conversationId = command.string("conversation");
      const includeEnded = command.flag("all");
      const schedules = await withOperator(command, io, (service) =>
        service.schedules.list({ conversationId, includeEnded }),
      );
      print(command, io, schedules, listRows);
    },
  },
  {
    path: ["schedules", "runs"],
    synopsis: "schedules runs ID [--limit N] [--json]",
    summary: "Show a schedule's recent occurrences, newest first, with the run each one admitted.",
    args: [ID_ARG],
    options: {
      limit: {
        type: "string",
        valueName: "N",
        description: `At most N (1-${OPERATOR_LIMITS.occurrences.max}). Default ${OPERATOR_LIMITS.occurrences.default}.`,
      },
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const id = command.arg(0);
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.occurrences.max });
      const occurrences = await withOperator(command, io, (service) => service.schedules.runs(id, limit));
      print(command, io, occurrences, occurrenceRows);
    },
  },
  stateChange("pause", "Stop firing an active schedule until it is resumed."),
  stateChange(
    "resume",
    "Fire a paused schedule again: a recurring one at its next future slot, a one-off at its time (late if passed).",
  ),
  stateChange("cancel", "End an active or paused schedule for good."),
];
