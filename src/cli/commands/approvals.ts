import { APPROVAL_STATES, type ApprovalRecord } from "../../runtime/store.ts";
import { fields, isoTime, orDash, preview, table } from "../format.ts";
import { actorOf } from "../options.ts";
import {
  ACTOR_OPTION,
  type CommandSpec,
  type GroupSpec,
  HELP_OPTION,
  JSON_OPTION,
  SOURCE_OPTIONS,
} from "../spec.ts";
import { print, withOperator } from "./shared.ts";

export const APPROVALS_GROUP: GroupSpec = {
  name: "approvals",
  summary: "tool calls that wait for a person's decision.",
};

const ID_ARG = { name: "ID", description: "Approval id (ap_…), as the chat's request shows it." };

function listRows(approvals: readonly ApprovalRecord[]): string {
  if (approvals.length === 0) return "No approvals match.\n";
  return table(
    ["ID", "STATE", "TOOL", "ARGUMENTS", "CONVERSATION", "CREATED", "EXPIRES", "DECIDED BY"],
    approvals.map((a) => [
      a.id,
      a.state,
      a.toolName,
      preview(JSON.stringify(a.input ?? null)),
      a.conversationId,
      isoTime(a.createdAtMs),
      isoTime(a.expiresAtMs),
      orDash(a.decidedBy),
    ]),
  );
}

function decided(approval: ApprovalRecord): string {
  return `${fields([
    ["id", approval.id],
    ["state", approval.state],
    ["tool", approval.toolName],
    ["decided by", orDash(approval.decidedBy)],
    ["successor run", orDash(approval.successorRunId)],
  ])}`;
}

const decide = (decision: "approve" | "deny"): CommandSpec => ({
  path: ["approvals", decision],
  synopsis: `approvals ${decision} ID [--actor NAME]`,
  summary:
    decision === "approve"
      ? "Approve a pending tool call: it runs once, and the answer goes to its chat."
      : "Deny a pending tool call: the model is told, and the answer goes to its chat.",
  args: [ID_ARG],
  options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
  async run(command, io) {
    const id = command.arg(0);
    const actor = actorOf(command, io.env);
    const approval = await withOperator(command, io, (service) =>
      service.approvals.decide(id, decision, actor),
    );
    print(command, io, approval, decided);
  },
});

export const APPROVALS_COMMANDS: CommandSpec[] = [
  {
    path: ["approvals", "list"],
    synopsis: "approvals list [--state S] [--conversation C] [--limit N] [--json]",
    summary: "List approval requests, newest first.",
    args: [],
    options: {
      state: {
        type: "string",
        valueName: "S",
        description: `Only this state: ${APPROVAL_STATES.join(", ")}.`,
      },
      conversation: { type: "string", valueName: "C", description: "Only this conversation id." },
      limit: { type: "string", valueName: "N", description: "At most N requests (1-1000). Default 100." },
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const state = command.choice("state", APPROVAL_STATES);
      const limit = command.integer("limit", { min: 1, max: 1000 });
      const conversationId = command.string("conversation");
      const approvals = await withOperator(command, io, (service) =>
        service.approvals.list({ state, conversationId, limit }),
      );
      print(command, io, approvals, listRows);
    },
  },
  decide("approve"),
  decide("deny"),
];
