import { readFileSync } from "node:fs";
import { SwitchboardError } from "../../errors.ts";
import { toJsonl, toMarkdown } from "../../operator/export.ts";
import { CONVERSATION_QUERY_MAX, OPERATOR_LIMITS } from "../../operator/limits.ts";
import type { ConversationSummary } from "../../operator/types.ts";
import type { MessagePageItem } from "../../runtime/store.ts";
import type { Message } from "../../runtime/types.ts";
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
import { PAGE_OPTIONS, print, printPage, readPages, withOperator } from "./shared.ts";

export const CONVERSATIONS_GROUP: GroupSpec = {
  name: "conversations",
  summary: "chats mapped to the agent and their messages.",
};

function listRows(conversations: readonly ConversationSummary[]): string {
  if (conversations.length === 0) return "No conversations yet.\n";
  return table(
    ["ID", "KEY", "RUNS", "ACTIVE", "LAST ACTIVITY", "CREATED"],
    conversations.map((c) => [
      c.id,
      orDash(c.key),
      String(c.runs),
      String(c.activeRuns),
      isoTime(c.lastActivityAtMs),
      isoTime(c.createdAtMs),
    ]),
  );
}

/** One line for a message: its text, with files and tool traffic named in brackets. */
export function messagePreview(message: Message, maxChars = 60): string {
  const pieces = message.parts.map((part): string => {
    switch (part.type) {
      case "text":
        return part.text;
      case "reasoning":
        return "";
      case "file":
        return `[file ${part.name ?? part.ref}]`;
      case "tool-call":
        return `[tool ${part.toolName}]`;
      case "tool-result":
        return `[${part.toolName} ${part.isError ? "failed" : "done"}]`;
      case "joined-input":
        return `[joined ${part.messageId}]`;
      default:
        return "";
    }
  });
  return preview(pieces.filter((p) => p !== "").join(" "), maxChars);
}

function describeConversation(
  id: string,
  shown: {
    conversation: ConversationSummary;
    model: string | null;
    items: MessagePageItem[];
    nextCursor: string | null;
  },
): string {
  const c = shown.conversation;
  const header = fields([
    ["id", c.id],
    ["key", orDash(c.key)],
    ["model", shown.model ?? "default (the surface's models.default, else SWITCHBOARD_MODEL)"],
    ["version", String(c.version)],
    ["runs", `${c.runs} (${c.activeRuns} active)`],
    ["last activity", isoTime(c.lastActivityAtMs)],
    ["created", isoTime(c.createdAtMs)],
  ]);
  // The API pages newest first; a page reads top to bottom in time order.
  const messages =
    shown.items.length === 0
      ? "No messages on this page.\n"
      : table(
          ["ORDER", "TIME", "ROLE", "RUN", "RUN STATE", "TEXT"],
          [...shown.items]
            .reverse()
            .map((item) => [
              String(item.order),
              isoTime(item.message.createdAtMs),
              item.message.role,
              item.message.runId,
              item.runState,
              messagePreview(item.message),
            ]),
        );
  const older =
    shown.nextCursor === null
      ? ""
      : `\nOlder messages: switchboard conversations show ${id} --cursor ${shown.nextCursor}\n`;
  return `${header}\n${messages}${older}`;
}

export const CONVERSATIONS_COMMANDS: CommandSpec[] = [
  {
    path: ["conversations", "list"],
    synopsis: "conversations list [--query TEXT] [--limit N] [--cursor C | --all] [--json]",
    summary: "List conversations, most recently active first, with their channel key and run counts.",
    args: [],
    options: {
      query: {
        type: "string",
        short: "q",
        valueName: "TEXT",
        description: `Only conversations, of any age, whose user id, user name or channel key contains TEXT (any case; % and _ are plain characters; at most ${CONVERSATION_QUERY_MAX} characters).`,
      },
      limit: {
        type: "string",
        valueName: "N",
        description: `At most N per page (1-${OPERATOR_LIMITS.conversations.max}). Default ${OPERATOR_LIMITS.conversations.default}.`,
      },
      ...PAGE_OPTIONS,
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.conversations.max });
      const query = command.string("query");
      const page = await withOperator(command, io, (service) =>
        readPages(command, (cursor) => service.conversations.list({ cursor, limit, query })),
      );
      printPage(command, io, page, (items) =>
        query !== undefined && items.length === 0
          ? `No conversation matches ${JSON.stringify(query)}.\n`
          : listRows(items),
      );
    },
  },
  {
    path: ["conversations", "show"],
    synopsis: "conversations show ID [--limit N] [--cursor C] [--json]",
    summary:
      "Show a conversation and its newest messages (older ones with --cursor), each with its run's state.",
    args: [{ name: "ID", description: "Conversation id (conv_…)." }],
    options: {
      limit: {
        type: "string",
        valueName: "N",
        description: `Messages per page (1-${OPERATOR_LIMITS.messages.max}). Default ${OPERATOR_LIMITS.messages.default}.`,
      },
      cursor: {
        type: "string",
        valueName: "CURSOR",
        description: "Show the messages older than the previous page (the cursor it ended with).",
      },
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const id = command.arg(0);
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.messages.max });
      const cursor = command.string("cursor");
      const shown = await withOperator(command, io, (service) =>
        service.conversations.show(id, { cursor, limit }),
      );
      if (!shown) {
        throw new SwitchboardError(
          "not_found",
          `No conversation ${id}. List conversations with \`switchboard conversations list\`.`,
        );
      }
      print(command, io, shown, (result) => describeConversation(id, result));
    },
  },
  {
    path: ["conversations", "set-model"],
    synopsis: "conversations set-model ID NAME [--actor NAME] [--json]",
    summary:
      "Set the model a conversation uses from its next run on: a name from SWITCHBOARD_CONFIG models, or default.",
    args: [
      { name: "ID", description: "Conversation id (conv_…)." },
      {
        name: "NAME",
        description: "A model name from SWITCHBOARD_CONFIG `models`, or `default` to clear the choice.",
      },
    ],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const name = command.arg(1);
      const model = name === "default" ? null : name;
      const result = await withOperator(command, io, (service) =>
        service.conversations.setModel(id, model, actorOf(command, io.env)),
      );
      print(
        command,
        io,
        result,
        (r) =>
          `Conversation ${r.conversationId} now uses ${r.model ?? "the default model"} from its next run on.\n`,
      );
    },
  },
  {
    path: ["conversations", "purge"],
    synopsis: "conversations purge ID [--actor NAME] [--json]",
    summary:
      "Forget a conversation for good: interrupt its runs, delete its messages, runs, state and schedules, drop its outbox text; a tombstone records who and when.",
    args: [{ name: "ID", description: "Conversation id (conv_…)." }],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const id = command.arg(0);
      const result = await withOperator(command, io, (service) =>
        service.conversations.purge(id, actorOf(command, io.env)),
      );
      print(command, io, result, (r) =>
        r.outcome === "purged"
          ? `Purged conversation ${r.conversationId} (by ${r.purgedBy ?? "unknown"} at ${isoTime(r.purgedAtMs)}). Its chat's next message starts a fresh conversation.\n`
          : `Conversation ${r.conversationId} was already purged (by ${r.purgedBy ?? "unknown"} at ${isoTime(r.purgedAtMs)}).\n`,
      );
    },
  },
  {
    path: ["conversations", "export"],
    synopsis: "conversations export ID [--format jsonl|markdown]",
    summary:
      "Print a conversation: messages, runs with their usage, schedules and outbox history (JSONL, docs/export-format.md), or a Markdown transcript.",
    args: [{ name: "ID", description: "Conversation id (conv_…)." }],
    options: {
      format: { type: "string", valueName: "FORMAT", description: "jsonl (default) or markdown." },
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const id = command.arg(0);
      const format = command.string("format") ?? "jsonl";
      if (format !== "jsonl" && format !== "markdown")
        throw command.usageError(`--format must be jsonl or markdown, not "${format}".`);
      const exported = await withOperator(command, io, (service) => service.conversations.export(id));
      if (!exported) {
        throw new SwitchboardError(
          "not_found",
          `No conversation ${id}. List conversations with \`switchboard conversations list\`.`,
        );
      }
      io.stdout(format === "jsonl" ? toJsonl(exported) : toMarkdown(exported));
    },
  },
  {
    path: ["conversations", "import"],
    synopsis: "conversations import FILE [--actor NAME] [--json]",
    summary: "Restore a JSONL export as a new conversation (no model call, nothing is sent).",
    args: [{ name: "FILE", description: "A file written by `conversations export ID`." }],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const path = command.arg(0);
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch (error) {
        throw new SwitchboardError("not_found", `Cannot read ${path}: ${(error as Error).message}.`);
      }
      const result = await withOperator(command, io, (service) =>
        service.conversations.import(text, actorOf(command, io.env)),
      );
      print(
        command,
        io,
        result,
        (r) =>
          `Imported ${r.sourceConversationId} as ${r.conversationId}: ${r.runs} runs, ${r.messages} messages.\n`,
      );
    },
  },
  {
    path: ["conversations", "branch"],
    synopsis: "conversations branch ID [--through RUN] [--actor NAME] [--json]",
    summary:
      "Copy a conversation's settled prefix (through RUN, default the settled tip) into a new conversation; the same request again returns the same copy.",
    args: [{ name: "ID", description: "Conversation id (conv_…)." }],
    options: {
      through: { type: "string", valueName: "RUN", description: "The last run to copy (run_…)." },
      ...ACTOR_OPTION,
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const id = command.arg(0);
      const result = await withOperator(command, io, (service) =>
        service.conversations.branch(id, command.string("through"), actorOf(command, io.env)),
      );
      print(
        command,
        io,
        result,
        (r) =>
          `${r.outcome === "created" ? "Branched" : "Already branched"} ${r.sourceConversationId} through ${r.throughRunId} as ${r.conversationId}: ${r.runs} runs, ${r.messages} messages.\n`,
      );
    },
  },
];
