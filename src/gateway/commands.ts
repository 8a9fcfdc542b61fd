import type { InboundMessage } from "../../channels/types.ts";
import type { OutboxRepository } from "../../outbox/types.ts";
import { runScheduleCommand } from "../../schedules/commands.ts";
import { parseScheduleCommand, SCHEDULE_COMMANDS } from "../../schedules/parse.ts";
import type { ScheduleService } from "../../schedules/service.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import { runStateCommand, STATE_COMMANDS } from "../state/commands.ts";
import { stateSummary } from "../state/slots.ts";
import type { StateStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { shortHash } from "../util/ids.ts";
import type { ApprovalService } from "./approvals.ts";

const OWN_COMMANDS = ["new", "stop", "status", "start", "help", "approve", "deny"] as const;
type CommandName =
  | (typeof OWN_COMMANDS)[number]
  | (typeof SCHEDULE_COMMANDS)[number]
  | (typeof STATE_COMMANDS)[number];

export interface CommandScope {
  message: InboundMessage;
  conversationId: string;
  /** `<channel>:<account>`: the namespace of the message's update key. */
  source: string;
}

export interface ChatCommands {
  /** The command `text` names, or null when it is ordinary input for the model. */
  match(text: string): CommandName | null;
  /** Runs a command once per update (a redelivery gets `duplicate`) and enqueues its reply. */
  run(name: CommandName, scope: CommandScope): Promise<{ duplicate: boolean; text: string }>;
  /** Replies without the model (e.g. "too long"), once per update. */
  notice(scope: CommandScope, text: string, outcome: string): Promise<{ duplicate: boolean }>;
}

export interface ChatCommandsOptions {
  runtime: Runtime;
  store: RuntimeStore;
  /** The conversation's goal and todo slots (/goal, /todo, /status). */
  state: StateStore;
  outbox: OutboxRepository;
  schedules: ScheduleService;
  defaultTimezone: string;
  clock: Clock;
  /** Wakes the delivery worker after a reply was enqueued. */
  notify: () => void;
  /** `/approve` and `/deny`; without it they say approvals are off. */
  approvals?: ApprovalService;
}

const HELP = [
  "I'm an AI assistant. Just write to me. Commands:",
  "/new — start a fresh conversation (the old one stays readable)",
  "/stop — stop the answer in progress",
  "/status — model, runs in progress and replies waiting",
  "/goal — the goal I work toward; /goal <text> sets it, /goal done marks it reached",
  "/todo — my todo list for the goal",
  "/in 10m stretch — a reminder after a delay",
  "/at 2026-12-01 09:00 call mum — at a date and time",
  "/every 0 9 * * 1-5 summarise my inbox — recurring (cron or e.g. /every 2h ...)",
  "/schedules, /cancel <id>, /tz Europe/Berlin",
  "/approve <id>, /deny <id> — decide a tool call that waits for approval",
].join("\n");

/** Chat commands handled without the model, the same on every channel. */
export function createChatCommands(options: ChatCommandsOptions): ChatCommands {
  const { runtime, store, outbox, clock } = options;
  const names: readonly string[] = [...OWN_COMMANDS, ...SCHEDULE_COMMANDS, ...STATE_COMMANDS];

  const replyKey = ({ message, source }: CommandScope) => `notice:${source}:${message.updateKey}`;

  const enqueueReply = async (scope: CommandScope, text: string) => {
    const { message, conversationId, source } = scope;
    await outbox.insert(
      [
        {
          key: replyKey(scope),
          runId: `notice_${shortHash(`${source}:${message.updateKey}`)}`,
          conversationId,
          channel: message.channel,
          account: message.account,
          target: message.replyTarget,
          ...(message.messageId ? { replyTo: message.messageId } : {}),
          kind: "message",
          markdown: text,
        },
      ],
      clock.now(),
    );
    options.notify();
  };

  /**
   * Claims the update; true when this delivery must (still) run the command. The receipt is
   * committed before the command runs and its reply after, so a process that died in between
   * left a receipt without a reply: the redelivery finishes the command (its effects are
   * idempotent: a schedule gets an id derived from the update) instead of dropping it.
   */
  const claim = async (scope: CommandScope, outcome: string): Promise<boolean> => {
    const claimed = await store.claimIngress({
      source: scope.source,
      key: scope.message.updateKey,
      outcome,
      payload: scope.message,
      conversationId: scope.conversationId,
      nowMs: clock.now(),
    });
    return claimed.fresh || (await outbox.show(replyKey(scope))) === null;
  };

  const timezoneOf = async (conversationId: string) =>
    (await store.loadConversationSettings(conversationId)).timezone ?? null;

  const execute = async (name: CommandName, scope: CommandScope): Promise<string> => {
    const { message, conversationId } = scope;
    switch (name) {
      case "new": {
        await runtime.interrupt({ conversationId });
        await store.rotateConversationKey(message.conversationKey, clock.now());
        return "Started a new conversation. The previous one is kept and stays readable for operators; your schedules carry on (/schedules lists them).";
      }
      case "stop":
        return (await runtime.interrupt({ conversationId }))
          ? "Stopped the answer in progress."
          : "Nothing is running right now.";
      case "status":
        return status(scope);
      case "start":
      case "help":
        return HELP;
      case "goal":
      case "todo":
        return runStateCommand(name, message.text, {
          store: options.state,
          conversationId,
          userId: message.principal.id,
          nowMs: clock.now(),
        });
      case "approve":
      case "deny": {
        if (!options.approvals) return "No tool asks for approval here.";
        const argument = message.text.trim().replace(/^\/[a-z]+(?:@\S+)?/i, "");
        return options.approvals.command(message, name, argument);
      }
      default: {
        const timezone = await timezoneOf(conversationId);
        const parsed = parseScheduleCommand(message.text.trim(), {
          nowMs: clock.now(),
          timezone: timezone ?? options.defaultTimezone,
        });
        if (!parsed) return HELP;
        if (!parsed.ok) return `${parsed.error}\nExample: ${parsed.example}`;
        return runScheduleCommand(parsed.command, {
          service: options.schedules,
          conversation: {
            conversationId,
            chatKey: message.conversationKey,
            replyTarget: message.replyTarget,
            channel: message.channel,
          },
          timezone: timezone ?? options.defaultTimezone,
          setTimezone: (tz) => store.saveConversationSettings(conversationId, { timezone: tz }, clock.now()),
          scheduleId: `sch_${shortHash(`${scope.source}:${message.updateKey}`)}`,
        });
      }
    }
  };

  const status = async ({ conversationId, message }: CommandScope): Promise<string> => {
    const active = await store.listActiveRuns(conversationId);
    const running = active.filter((r) => r.state === "running" || r.state === "interrupt_requested").length;
    const counts = await outbox.counts(conversationId);
    const schedules = await options.schedules.listForChat({
      conversationId,
      chatKey: message.conversationKey,
    });
    const settings = await store.loadConversationSettings(conversationId);
    const timezone = settings.timezone ?? options.defaultTimezone;
    const allowed = settings.alwaysAllow ?? [];
    const state = await options.state.loadState(conversationId);
    return [
      `Model: ${runtime.models.map((m) => m.label).join(" → ")}`,
      `Answers: ${running} running, ${active.length - running} queued`,
      `Replies: ${counts.waiting} waiting to be delivered, ${counts.ambiguous} ambiguous (an operator is checking them)`,
      `Schedules: ${schedules.length} active · time zone ${timezone}`,
      stateSummary(state),
      `Tools always allowed in this chat: ${allowed.length > 0 ? allowed.join(", ") : "none"} (/new clears them)`,
    ].join("\n");
  };

  return {
    match(text) {
      const match = /^\/([a-z]+)(?:@\S+)?(?:\s|$)/i.exec(text);
      const name = match?.[1]?.toLowerCase();
      return name && names.includes(name) ? (name as CommandName) : null;
    },
    async run(name, scope) {
      if (!(await claim(scope, `command:${name}`))) return { duplicate: true, text: "" };
      const text = await execute(name, scope);
      await enqueueReply(scope, text);
      return { duplicate: false, text };
    },
    async notice(scope, text, outcome) {
      if (!(await claim(scope, outcome))) return { duplicate: true };
      await enqueueReply(scope, text);
      return { duplicate: false };
    },
  };
}
