import type { ChannelName, FileLimits, InboundMessage } from "../../channels/types.ts";
import type { OutboxButtons, OutboxMedia, OutboxRepository } from "../../outbox/types.ts";
import { runScheduleCommand } from "../../schedules/commands.ts";
import { parseScheduleCommand } from "../../schedules/parse.ts";
import type { ScheduleService } from "../../schedules/service.ts";
import { principalKey } from "../access/principal.ts";
import type { ApprovalService } from "../approvals/service.ts";
import type { BudgetGuard } from "../budgets/guard.ts";
import type { ChildAgents } from "../children/service.ts";
import { runningChildrenLines } from "../children/status.ts";
import { isSwitchboardError } from "../errors.ts";
import { readConversationExport } from "../operator/export.ts";
import { forgetConversation } from "../operator/forget.ts";
import type { BlobJanitor } from "../runtime/blob-cleanup.ts";
import { type BlobStore, bytesSource } from "../runtime/blobs.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import { runStateCommand } from "../state/commands.ts";
import { stateSummary } from "../state/slots.ts";
import type { StateStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { shortHash } from "../util/ids.ts";
import { COMMAND_NAMES, type CommandName, HELP_TEXT } from "./command-list.ts";
import { exportReply, exportText } from "./export-reply.ts";
import { conversationMark, signForgetButton, verifyForgetButton } from "./forget-buttons.ts";
import type { ModelChoices } from "./model-choice.ts";

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
  /**
   * A press on a /forget prompt's button, once per press (a redelivery gets `duplicate`). A
   * forged, someone else's or stale press is refused and changes nothing. `notice` is for the presser.
   */
  forgetPress(
    scope: CommandScope,
  ): Promise<{ duplicate: boolean; notice: string; refused?: "forged" | "stale" }>;
}

export interface ChatCommandsOptions {
  runtime: Runtime;
  /** Child agents, stopped with their conversation's /stop, /new and /forget; null or absent: none. */
  children?: Pick<ChildAgents, "stopAll" | "descendants" | "running"> | null;
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
  /** The models /model picks from; absent: /model says there is nothing to pick. */
  models?: ModelChoices;
  /** Budgets /status reports on; absent or none configured: no budget lines. */
  budgets?: BudgetGuard;
  /** A named account's name by channel and account id (undefined: `default`), for budgets' principals. */
  accountNameOf?: (channel: InboundMessage["channel"], account: string) => string | undefined;
  /** The key /forget's buttons are signed with (the approval key); absent: /forget asks in text only. */
  buttonSecret?: () => string;
  /** Removes the files of a conversation left with /new or /forget (none other points at). */
  blobs?: Pick<BlobJanitor, "collect" | "sweep">;
  /**
   * Files out, for /export: the blob store the file goes into, and how a channel takes files
   * (undefined: it sends none), and how long an export's link works where the gateway serves it
   * (SWITCHBOARD_EXPORT_TTL_HOURS; default 24 h). Absent: /export answers with a Markdown message
   * everywhere.
   */
  /**
   * The channel shows what run() returns itself (the terminal chat prints it): no reply goes to
   * the outbox. Default false: replies are outbox records the channel's adapter delivers.
   */
  showsReplies?: boolean;
  files?: {
    store: BlobStore;
    limits: (channel: ChannelName) => FileLimits | undefined;
    exportTtlMs?: number;
  };
}

const FORGET_QUESTION =
  "This deletes this conversation for good: its messages, my answers, its schedules and settings. Send /forget confirm (or press Delete it) to go ahead.";

/** Chat commands handled without the model, the same on every channel. */
export function createChatCommands(options: ChatCommandsOptions): ChatCommands {
  const { runtime, store, outbox, clock } = options;
  const names: readonly string[] = COMMAND_NAMES;

  const replyKey = ({ message, source }: CommandScope) => `notice:${source}:${message.updateKey}`;

  const enqueueReply = async (
    scope: CommandScope,
    text: string,
    buttons?: OutboxButtons,
    media?: OutboxMedia,
  ) => {
    if (options.showsReplies) return;
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
          ...(buttons ? { presentation: { buttons } } : {}),
          ...(media ? { media } : {}),
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
  const claim = async (
    scope: CommandScope,
    outcome: string,
    forget?: { target: string },
  ): Promise<{ run: boolean; previousPayload: unknown }> => {
    const claimed = await store.claimIngress({
      source: scope.source,
      key: scope.message.updateKey,
      outcome,
      payload: forget ? { ...scope.message, forget: forget.target } : scope.message,
      // A /forget receipt belongs to no conversation, so the purge keeps it: a redelivery of the
      // update stays a duplicate instead of forgetting the fresh conversation.
      ...(forget ? {} : { conversationId: scope.conversationId }),
      nowMs: clock.now(),
    });
    return {
      run: claimed.fresh || (await outbox.show(replyKey(scope))) === null,
      previousPayload: claimed.previousPayload,
    };
  };

  const isForgetConfirm = (text: string) => /^\/forget(?:@\S+)?\s+confirm\s*$/i.test(text.trim());

  /**
   * Detaches the chat from `target` (its next message starts a fresh conversation and never joins
   * the one going away), then interrupts its runs and purges it. Returns the reply.
   */
  const forget = async ({ message }: CommandScope, target: string): Promise<string> => {
    if ((await store.resolveConversationKey(message.conversationKey, clock.now())) === target)
      await store.rotateConversationKey(message.conversationKey, clock.now());
    await options.children?.stopAll(target);
    // Its child agents' conversations hold what it delegated: they go with it.
    const delegated = (await options.children?.descendants(target)) ?? [];
    try {
      for (const conversationId of [target, ...delegated]) {
        await forgetConversation(
          {
            store,
            clock,
            stopRun: (id, runId) => runtime.interrupt({ conversationId: id, runId, reason: "superseded" }),
            ...(options.blobs ? { blobs: options.blobs } : {}),
          },
          conversationId,
          `user:${message.channel}:${message.principal.id}`,
        );
      }
    } catch (error) {
      if (!isSwitchboardError(error, "state_conflict")) throw error;
      return "I could not forget this conversation yet: an answer is still being written. Send /forget confirm again in a moment.";
    }
    return "Done: I deleted this conversation — its messages, answers, schedules and settings, and its /export files (their download links no longer work). Your next message starts a fresh one.";
  };

  /**
   * `/forget confirm` or its button: claims the update with the conversation it forgets, then
   * forgets it and replies in the chat's fresh conversation. A redelivery after a crash finishes
   * the conversation the first delivery meant.
   */
  const finishForget = async (
    scope: CommandScope,
    notice: string,
  ): Promise<{ duplicate: boolean; notice: string; text: string }> => {
    const claimed = await claim(scope, "command:forget", { target: scope.conversationId });
    if (!claimed.run) return { duplicate: true, notice: "", text: "" };
    const earlier = (claimed.previousPayload as { forget?: unknown } | null)?.forget;
    const text = await forget(scope, typeof earlier === "string" ? earlier : scope.conversationId);
    const fresh = await store.resolveConversationKey(scope.message.conversationKey, clock.now());
    await enqueueReply({ ...scope, conversationId: fresh }, text);
    // The presser's notice: short when it worked, the whole reply when it could not.
    return { duplicate: false, notice: text.startsWith("Done") ? notice : text, text };
  };

  /** The /forget prompt's buttons, for the user who asked; none without a signing key. */
  const forgetButtons = ({ message, conversationId }: CommandScope): OutboxButtons | undefined => {
    const secret = options.buttonSecret?.();
    if (!secret) return undefined;
    const sign = (choice: "confirm" | "keep") =>
      signForgetButton(secret, conversationId, message.principal.id, choice);
    return [
      [
        { label: "Delete it", data: sign("confirm") },
        { label: "Keep it", data: sign("keep") },
      ],
    ];
  };

  const timezoneOf = async (conversationId: string) =>
    (await store.loadConversationSettings(conversationId)).timezone ?? null;

  /** Every command but /export, whose reply may be a file. */
  const execute = async (name: Exclude<CommandName, "export">, scope: CommandScope): Promise<string> => {
    const { message, conversationId } = scope;
    switch (name) {
      case "new": {
        await runtime.interrupt({ conversationId });
        await options.children?.stopAll(conversationId);
        await store.rotateConversationKey(message.conversationKey, clock.now());
        // The old conversation stays readable; its files go (an operator sees "no longer stored"),
        // but an /export's stays for the lifetime its caption stated (`keepUntilMs`).
        const released = await options.blobs?.collect(conversationId);
        await store.saveConversationSettings(conversationId, { mediaReleased: true }, clock.now());
        if (released) void options.blobs?.sweep(released);
        return "Started a new conversation. The previous one is kept and stays readable for operators; your schedules carry on (/schedules lists them).";
      }
      case "stop": {
        const answer = await runtime.interrupt({ conversationId });
        const children = (await options.children?.stopAll(conversationId)) ?? 0;
        if (answer) return "Stopped the answer in progress.";
        return children > 0 ? "Stopped the child agents at work." : "Nothing is running right now.";
      }
      case "status":
        return status(scope);
      case "model":
        return model(scope);
      case "forget":
        return FORGET_QUESTION;
      case "start":
      case "help":
        return HELP_TEXT;
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
        if (!parsed) return HELP_TEXT;
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

  /**
   * /export: the transcript as a Markdown file where the channel takes files, stored in the blob
   * store before its outbox record (which pins it until sent); else a Markdown message. A
   * redelivery after a crash in between stores the file again (same bytes or a new blob the
   * cleanup's grace covers) and enqueues it once, under the update's reply key.
   */
  const exportConversation = async ({
    message,
    conversationId,
  }: CommandScope): Promise<{ text: string; media?: OutboxMedia }> => {
    const exported = await readConversationExport(
      {
        runtime: store,
        schedules: (id) => options.schedules.list(id, { includeEnded: true }),
        outbox: async () => [],
      },
      conversationId,
      clock.now(),
    );
    const files = options.files;
    if (!files) return { text: exportText(exported) };
    const reply = exportReply(exported, files.limits(message.channel), files.exportTtlMs);
    if (reply.kind === "text") return { text: reply.text };
    const { bytes } = reply;
    const stored = await files.store.put(bytesSource(bytes), { maxBytes: bytes.byteLength });
    return {
      text: reply.caption,
      media: {
        blobId: stored.id,
        filename: reply.filename,
        mimeType: reply.mimeType,
        sizeBytes: stored.sizeBytes,
        ...(reply.keepUntilMs === undefined ? {} : { keepUntilMs: reply.keepUntilMs }),
      },
    };
  };

  const modelList = (current: string | null, lead: string, names: readonly string[]): string => {
    const models = options.models;
    const own = runtime.models[0]?.label ?? "the gateway's model";
    if (!models || names.length === 0)
      return `There are no models to pick from (the operator names them in SWITCHBOARD_CONFIG "models"). This conversation uses ${own}.`;
    return [
      lead,
      ...names.map((name) => {
        const spec = models.chain(name)[0]?.spec ?? "";
        return `• ${name} — ${spec}${name === current ? " (current)" : ""}`;
      }),
      current === null ? `Now: the gateway's default, ${own}.` : "",
      "Pick one with /model NAME; /model default goes back to the default.",
    ]
      .filter((line) => line !== "")
      .join("\n");
  };

  const model = async ({ message, conversationId }: CommandScope): Promise<string> => {
    const argument = message.text.trim().split(/\s+/).slice(1).join(" ").trim();
    const where = options.models?.factsOf({ ...message, user: message.principal.id });
    const current = options.models && where ? await options.models.current(conversationId, where) : null;
    const names = (where && options.models?.namesFor(where)) ?? [];
    if (argument === "") return modelList(current?.name ?? null, "Models you can pick:", names);
    if (!options.models || !where || names.length === 0) return modelList(null, "", names);
    if (argument.toLowerCase() === "default") {
      await store.saveConversationSettings(conversationId, { model: undefined }, clock.now());
      const now = await options.models.current(conversationId, where);
      return `Back to the default model${now.name ? ` (${now.name})` : ""}. It applies from your next message.`;
    }
    const name = argument.toLowerCase();
    if (!(await options.models.choose(conversationId, name, where)))
      return modelList(current?.name ?? null, `There is no model "${argument}". Models you can pick:`, names);
    const spec = options.models.chain(name)[0]?.spec ?? name;
    return `Model set to ${name} (${spec}). It applies from your next message; an answer in progress keeps its model.`;
  };

  const modelStatus = async ({ message, conversationId }: CommandScope): Promise<string> => {
    if (!options.models?.configured) return `Model: ${runtime.models.map((m) => m.label).join(" → ")}`;
    const current = await options.models.current(
      conversationId,
      options.models.factsOf({ ...message, user: message.principal.id }),
    );
    const chain = options.models
      .chain(current.name)
      .map((m) => m.label)
      .join(" → ");
    const name = current.name === null ? "default" : `${current.name}${current.chosen ? "" : " (default)"}`;
    return `Model: ${name}: ${chain}`;
  };

  const status = async (scope: CommandScope): Promise<string> => {
    const { conversationId, message } = scope;
    const active = await store.listActiveRuns(conversationId);
    const running = active.filter((r) => r.state === "running" || r.state === "interrupt_requested").length;
    const counts = await outbox.counts(conversationId);
    // A reply the platform refused for good (WhatsApp outside its 24-hour window, say) says why.
    const [lastFailed] = await outbox.list({ state: "failed", conversationId, limit: 1 });
    const schedules = await options.schedules.listForChat({
      conversationId,
      chatKey: message.conversationKey,
    });
    const settings = await store.loadConversationSettings(conversationId);
    const timezone = settings.timezone ?? options.defaultTimezone;
    const allowed = settings.alwaysAllow ?? [];
    const state = await options.state.loadState(conversationId);
    const budgetLines = options.budgets?.enabled
      ? await options.budgets.status({
          channel: message.channel,
          surface: message.surface,
          principal: principalKey(
            message.channel,
            options.accountNameOf?.(message.channel, message.account),
            message.principal.id,
          ),
        })
      : [];
    const childLines = options.children
      ? runningChildrenLines(await options.children.running(conversationId), clock.now())
      : [];
    return [
      await modelStatus(scope),
      `Answers: ${running} running, ${active.length - running} queued`,
      ...childLines,
      `Replies: ${counts.waiting} waiting to be delivered, ${counts.ambiguous} ambiguous (an operator is checking them)`,
      ...(lastFailed
        ? [`Last reply not delivered (${lastFailed.id}): ${lastFailed.lastError ?? "failed"}`]
        : []),
      `Schedules: ${schedules.length} active · time zone ${timezone}`,
      stateSummary(state),
      `Tools always allowed in this chat: ${allowed.length > 0 ? allowed.join(", ") : "none"} (/new clears them)`,
      ...budgetLines,
    ].join("\n");
  };

  return {
    match(text) {
      const match = /^\/([a-z]+)(?:@\S+)?(?:\s|$)/i.exec(text);
      const name = match?.[1]?.toLowerCase();
      return name && names.includes(name) ? (name as CommandName) : null;
    },
    async run(name, scope) {
      if (name === "forget" && isForgetConfirm(scope.message.text)) {
        const done = await finishForget(scope, "Deleted.");
        return { duplicate: done.duplicate, text: done.text };
      }
      if (!(await claim(scope, `command:${name}`)).run) return { duplicate: true, text: "" };
      if (name === "export") {
        const reply = await exportConversation(scope);
        await enqueueReply(scope, reply.text, undefined, reply.media);
        return { duplicate: false, text: reply.text };
      }
      const text = await execute(name, scope);
      await enqueueReply(scope, text, name === "forget" ? forgetButtons(scope) : undefined);
      return { duplicate: false, text };
    },
    async forgetPress(scope) {
      const { message } = scope;
      const secret = options.buttonSecret?.();
      const checked = secret
        ? verifyForgetButton(secret, message.action?.data ?? "", message.principal.id)
        : ({ ok: false, reason: "malformed" } as const);
      if (!checked.ok) return { duplicate: false, notice: "This button is not valid.", refused: "forged" };
      const current = scope.conversationId;
      if (checked.mark === conversationMark(current)) {
        if (checked.choice === "keep") {
          if (!(await claim(scope, "command:forget-keep")).run) return { duplicate: true, notice: "" };
          await enqueueReply(scope, "Kept: nothing was deleted.");
          return { duplicate: false, notice: "Kept." };
        }
        return finishForget(scope, "Deleted.");
      }
      // The chat moved on (forgotten, or /new) since the prompt, or this is a redelivered press
      // whose forget already ran: its receipt decides which.
      const prior = await store.claimIngress({
        source: scope.source,
        key: message.updateKey,
        outcome: "refused:stale-button",
        payload: message,
        conversationId: current,
        nowMs: clock.now(),
      });
      if (!prior.fresh && prior.previousOutcome === "command:forget") return finishForget(scope, "Deleted.");
      if (!prior.fresh) return { duplicate: true, notice: "" };
      return {
        duplicate: false,
        refused: "stale",
        notice:
          "This button is out of date: that conversation was already forgotten or replaced. Nothing was deleted.",
      };
    },
    async notice(scope, text, outcome) {
      if (!(await claim(scope, outcome)).run) return { duplicate: true };
      await enqueueReply(scope, text);
      return { duplicate: false };
    },
  };
}
