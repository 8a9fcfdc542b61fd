import type { OutboxRecord } from "../../../outbox/types.ts";
import { SwitchboardError } from "../../errors.ts";
import { OPERATOR_LIMITS } from "../../operator/limits.ts";
import { OUTBOX_STATES } from "../../operator/validate.ts";
import { fields, isoTime, orDash, preview, table } from "../format.ts";
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
import { PAGE_OPTIONS, print, printPage, readPages, withOperator } from "./shared.ts";

export const OUTBOX_GROUP: GroupSpec = {
  name: "outbox",
  summary: "answers waiting for, or stuck in, delivery.",
};

const ID_ARG = { name: "ID", description: "Outbox record id (obx_…) or key (<runId>:0)." };
const NOTE_OPTION = {
  note: { type: "string", valueName: "N", description: "Why, in your words; kept in the record's history." },
} as const;

function listRows(records: readonly OutboxRecord[]): string {
  if (records.length === 0) return "No outbox records match.\n";
  return table(
    ["ID", "STATE", "KIND", "CHANNEL", "TARGET", "ATTEMPTS", "UPDATED", "TEXT"],
    records.map((r) => [
      r.id,
      r.state,
      r.kind,
      r.channel,
      r.target,
      String(r.attempts),
      isoTime(r.updatedAtMs),
      preview(r.markdown, 40),
    ]),
  );
}

export function describeRecord(r: OutboxRecord): string {
  const delivery =
    r.kind === "message"
      ? ([
          [
            "chunks",
            r.rendered ? `${r.chunksDelivered}/${r.rendered.chunks.length} delivered` : "not rendered yet",
          ],
        ] as const)
      : ([["final", r.final ? "yes" : "no (the run is still streaming)"]] as const);
  const history = table(
    ["TIME", "ACTOR", "ACTION", "NOTE"],
    r.history.map((h) => [isoTime(h.atMs), h.actor, h.action, orDash(h.note)]),
  );
  const summary = fields([
    ["id", r.id],
    ["key", r.key],
    ["state", r.state],
    ["kind", r.kind],
    ["run", r.runId],
    ["conversation", r.conversationId],
    ["channel", `${r.channel} (account ${r.account})`],
    ["target", r.target],
    ["reply to", orDash(r.replyTo)],
    ["attempts", String(r.attempts)],
    ["next attempt", r.state === "pending" ? isoTime(r.nextAttemptAtMs) : "-"],
    ...delivery,
    ["platform ids", r.receipt ? r.receipt.messageIds.join(", ") : "-"],
    ["last error", orDash(r.lastError)],
    ["created", isoTime(r.createdAtMs)],
    ["updated", isoTime(r.updatedAtMs)],
  ]);
  return `${summary}\nHistory:\n${history}\nText:\n${r.markdown}\n`;
}

function changed(record: OutboxRecord): string {
  const last = record.history.at(-1);
  const by = last ? ` (${last.action} by ${last.actor} at ${isoTime(last.atMs)})` : "";
  return `Outbox record ${record.id} is now ${record.state}${by}.\n`;
}

function notFound(id: string): SwitchboardError {
  return new SwitchboardError(
    "not_found",
    `No outbox record ${id}. List records with \`switchboard outbox list\`.`,
  );
}

function outcomeOf(command: ParsedCommand): "delivered" | "failed" {
  const delivered = command.flag("delivered");
  const failed = command.flag("failed");
  if (delivered === failed) {
    throw command.usageError(
      delivered
        ? "Give one of --delivered or --failed, not both."
        : "Say what you found on the platform: --delivered (it is in the chat) or --failed (it is not).",
    );
  }
  return delivered ? "delivered" : "failed";
}

export const OUTBOX_COMMANDS: CommandSpec[] = [
  {
    path: ["outbox", "list"],
    synopsis: "outbox list [--state S] [--conversation C] [--limit N] [--cursor C | --all] [--json]",
    summary: "List outbox records, newest first.",
    args: [],
    options: {
      state: { type: "string", valueName: "S", description: `Only this state: ${OUTBOX_STATES.join(", ")}.` },
      conversation: { type: "string", valueName: "C", description: "Only this conversation id." },
      limit: {
        type: "string",
        valueName: "N",
        description: `At most N records per page (1-${OPERATOR_LIMITS.outbox.max}). Default ${OPERATOR_LIMITS.outbox.default}.`,
      },
      ...PAGE_OPTIONS,
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const state = command.choice("state", OUTBOX_STATES);
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.outbox.max });
      const conversationId = command.string("conversation");
      const page = await withOperator(command, io, (service) =>
        readPages(command, (cursor) => service.outbox.list({ state, conversationId, cursor, limit })),
      );
      printPage(command, io, page, listRows);
    },
  },
  {
    path: ["outbox", "show"],
    synopsis: "outbox show ID [--json]",
    summary: "Show one record: state, platform ids, full history and text.",
    args: [ID_ARG],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const record = await withOperator(command, io, (service) => service.outbox.show(id));
      if (!record) throw notFound(id);
      print(command, io, record, describeRecord);
    },
  },
  {
    path: ["outbox", "retry"],
    synopsis: "outbox retry ID [--note N] [--actor NAME]",
    summary: "Send an ambiguous or failed record again, now, with attempts reset.",
    details:
      "For an ambiguous record, first check the chat: if the message is there, use `outbox resolve ID --delivered` instead, or it is shown twice.",
    args: [ID_ARG],
    options: { ...NOTE_OPTION, ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const actor = actorOf(command, io.env);
      const record = await withOperator(command, io, (service) =>
        service.outbox.retry(id, actor, command.string("note")),
      );
      print(command, io, record, changed);
    },
  },
  {
    path: ["outbox", "resolve"],
    synopsis: "outbox resolve ID --delivered|--failed --note N [--actor NAME]",
    summary: "Record what you found on the platform for an ambiguous or failed record. Nothing is sent.",
    details:
      "--delivered: the message is in the chat; the record is done. --failed: it is not, and it should not be sent again. Later answers to the same chat then go out. The note (what you checked) is required: it is the audit trail.",
    args: [ID_ARG],
    options: {
      delivered: { type: "boolean", description: "The message is visible in the chat." },
      failed: { type: "boolean", description: "It is not, and must not be sent again." },
      ...NOTE_OPTION,
      ...ACTOR_OPTION,
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const id = command.arg(0);
      const outcome = outcomeOf(command);
      const note = command.string("note")?.trim();
      if (!note)
        throw command.usageError("Say what you checked on the platform with --note N (kept in history).");
      const actor = actorOf(command, io.env);
      const record = await withOperator(command, io, (service) =>
        service.outbox.resolve(id, outcome, actor, note),
      );
      print(command, io, record, changed);
    },
  },
  {
    path: ["outbox", "cancel"],
    synopsis: "outbox cancel ID [--note N] [--actor NAME]",
    summary: "Never send a pending, ambiguous or failed record; unblocks the chat's later answers.",
    args: [ID_ARG],
    options: { ...NOTE_OPTION, ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const actor = actorOf(command, io.env);
      const record = await withOperator(command, io, (service) =>
        service.outbox.cancel(id, actor, command.string("note")),
      );
      print(command, io, record, changed);
    },
  },
];
