import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import {
  normalizePairingCode,
  PAIRING_ALPHABET,
  PAIRING_CODE_LENGTH,
  PAIRING_MAX_WRONG_ATTEMPTS,
} from "../access/pairing.ts";
import { createApprovalService } from "../approvals/service.ts";
import { childTree, delegatedConversations } from "../children/tree.ts";
import { SwitchboardError } from "../errors.ts";
import { readRunContext } from "../run-context.ts";
import { fingerprintOf } from "../runtime/runtime.ts";
import { APPROVAL_STATES } from "../runtime/store.ts";
import { toolCallSummaries } from "../runtime/tool-calls.ts";
import { answerText } from "../runtime/types.ts";
import { parseSearchQuery } from "../search/query.ts";
import type { Clock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import { silentLogger } from "../util/log.ts";
import { type BudgetSettings, budgetOperations } from "./budgets.ts";
import { decodeCursor, toPage } from "./cursor.ts";
import { branchConversation, importConversation, readConversationExport } from "./export.ts";
import { type ForgetOptions, forgetConversation } from "./forget.ts";
import { OPERATOR_LIMITS } from "./limits.ts";
import type { ConversationListItem, ConversationSummary, OperatorService, OperatorStores } from "./types.ts";
import {
  checkActor,
  checkConversationQuery,
  checkLimit,
  checkNote,
  checkOneOf,
  OUTBOX_STATES,
  RUN_STATES,
} from "./validate.ts";

export { OPERATOR_LIMITS } from "./limits.ts";
export type { ConversationSummary, OperatorService } from "./types.ts";

export interface OperatorServiceOptions {
  /** The opened stores; the caller closes them. */
  stores: OperatorStores;
  clock: Clock;
  /**
   * Called after an operator retried, resolved or cancelled an outbox record, so a running
   * delivery worker looks at it now rather than at its next wake-up.
   */
  onOutboxChanged?: () => void;
  /** Called after an operator paused, resumed or cancelled a schedule, so a scheduler re-arms now. */
  onSchedulesChanged?: () => void;
  /** Called after an operator decided an approval, so a runtime runs the successor now. */
  onApprovalDecided?: () => void;
  /**
   * The model names `conversations.setModel` accepts (SWITCHBOARD_CONFIG `models`), or how to read
   * them when first needed (the CLI reads the config file only for set-model). Default none.
   */
  modelNames?: readonly string[] | (() => readonly string[]);
  /**
   * SWITCHBOARD_CONFIG `budgets` and the zone they count in, or how to read them when first
   * needed (the CLI reads the config file only for `budgets`). Default: none, in UTC.
   */
  budgets?: BudgetSettings | (() => BudgetSettings);
  /** Ends a run now (the gateway's runtime); without it a purge commits a stop request and waits. */
  stopRun?: (conversationId: string, runId: string) => Promise<unknown>;
  /** Removes a purged conversation's files at once (the gateway's); else its periodic sweep does. */
  blobs?: ForgetOptions["blobs"];
}

/**
 * The operator view and controls over the stores. Validates loose input (filters, limits, actor)
 * with `input_invalid`; unknown ids are null for reads and `not_found` for changes.
 */
export function createOperatorService(options: OperatorServiceOptions): OperatorService {
  const { stores, clock } = options;
  const queries = stores.operator;
  // Only pause/resume/cancel/occurrences are used: they never dispatch, and without start() the
  // service arms no timer.
  const schedules: ScheduleService = createScheduleService({
    repository: stores.schedules,
    clock,
    dispatch: async () => ({
      status: "retry",
      reason: "The operator service never fires schedules; the gateway's scheduler does.",
    }),
  });

  const changed = (hook: (() => void) | undefined) => {
    try {
      hook?.();
    } catch {
      // The change is committed; a worker or scheduler that missed the nudge finds it later.
    }
  };
  const outboxChanged = () => changed(options.onOutboxChanged);
  const schedulesChanged = <T>(result: T): T => {
    changed(options.onSchedulesChanged);
    return result;
  };

  async function existingSchedule(scheduleId: string): Promise<void> {
    if (!(await stores.schedules.get(scheduleId))) {
      throw new SwitchboardError(
        "not_found",
        `No schedule ${scheduleId}. List schedules with \`switchboard schedules list --all\`.`,
        { details: { scheduleId } },
      );
    }
  }

  // Operators decide without a chat identity: no approver check; the successor is admitted here
  // and run by the gateway (told in-process by onApprovalDecided, or by its commit watch).
  const approvals = createApprovalService({
    submit: async (request) => {
      const nowMs = clock.now();
      const admitted = await stores.runtime.admit({
        conversation: { id: request.conversationId! },
        idempotencyKey: request.idempotencyKey,
        fingerprint: fingerprintOf(request.parts),
        parts: request.parts,
        context: request.context ?? null,
        policy: request.policy ?? "queue",
        coalescePending: false,
        ...(request.approval ? { approval: request.approval } : {}),
        proposedIds: { runId: newId("run", nowMs), messageId: newId("msg", nowMs) },
        nowMs,
      });
      return { runId: admitted.runId };
    },
    store: stores.runtime,
    outbox: stores.outbox,
    approvers: () => [],
    secret: () => {
      throw new Error("operators do not sign approval prompts");
    },
    clock,
    logger: silentLogger,
    notify: outboxChanged,
  });

  const budgetSettings = options.budgets;
  /** The summary with its channel and user (from the latest run's context) and newest message. */
  async function withLatest(summary: ConversationSummary): Promise<ConversationListItem> {
    const [[run], [message]] = await Promise.all([
      queries.listRuns({ conversationId: summary.id, limit: 1 }),
      queries.listMessagesNewestFirst(summary.id, { limit: 1 }),
    ]);
    const context = (run?.context ?? {}) as { channel?: string; principal?: { id?: string; name?: string } };
    return {
      ...summary,
      channel: context.channel ?? null,
      title: context.principal?.name ?? context.principal?.id ?? null,
      lastMessage: message
        ? {
            role: message.message.role,
            text: answerText(message.message.parts).slice(0, 200),
            atMs: message.message.createdAtMs,
          }
        : null,
    };
  }

  return {
    budgets: budgetOperations({
      store: stores.budgets,
      clock,
      settings: () =>
        typeof budgetSettings === "function"
          ? budgetSettings()
          : (budgetSettings ?? { budgets: undefined, timezone: "UTC" }),
    }),
    access: {
      async approve(input, actor, attemptKey) {
        const by = checkActor(actor);
        const code = normalizePairingCode(String(input));
        if (code === null) {
          throw new SwitchboardError(
            "input_invalid",
            `${JSON.stringify(input)} is not a pairing code: codes are ${PAIRING_CODE_LENGTH} characters of ${PAIRING_ALPHABET}, as the bot sent them to the user.`,
            { details: { field: "code" } },
          );
        }
        const result = await stores.access.approvePairingCode(code, by, clock.now(), attemptKey ?? by);
        switch (result.outcome) {
          case "approved":
            return result.grant;
          case "unknown":
            throw new SwitchboardError(
              "not_found",
              `No pairing code ${code} (wrong attempt ${result.wrongAttempts} of ${PAIRING_MAX_WRONG_ATTEMPTS} allowed per hour). Check the code with the user; \`switchboard access list\` shows who is waiting.`,
              { details: { wrongAttempts: result.wrongAttempts } },
            );
          case "expired":
            throw new SwitchboardError(
              "state_conflict",
              `Pairing code ${code} expired. Ask the user to write to the bot again for a new code.`,
            );
          case "already_redeemed":
            throw new SwitchboardError(
              "state_conflict",
              result.grant
                ? `Pairing code ${code} was already approved: ${result.grant.channel} user ${result.grant.userId} has access. Nothing changed.`
                : `Pairing code ${code} was already approved, and that access was revoked since. Nothing changed; the user can ask for a new code.`,
            );
          case "locked":
            throw new SwitchboardError(
              "state_conflict",
              `Too many wrong pairing codes were tried by you in the last hour; your approvals are locked until ${new Date(result.retryAtMs).toISOString()}. Other operators can still approve.`,
            );
        }
      },
      async list() {
        const [grants, open] = await Promise.all([
          stores.access.listGrants(),
          stores.access.listOpenCodes(clock.now()),
        ]);
        return {
          grants,
          pending: open.map(({ channel, userId, userName, expiresAtMs }) => ({
            channel,
            userId,
            userName,
            expiresAtMs,
          })),
        };
      },
      async revoke(channel, userId, actor) {
        checkActor(actor);
        if (!(await stores.access.revokeGrant(String(channel), String(userId)))) {
          throw new SwitchboardError(
            "not_found",
            `No access grant for ${channel} user ${userId}. \`switchboard access list\` shows the grants.`,
            { details: { channel, userId } },
          );
        }
        return { channel, userId };
      },
    },
    approvals: {
      async list(filter) {
        checkOneOf("state", filter.state, APPROVAL_STATES);
        const limit = checkLimit("limit", filter.limit, 100, 1000);
        return stores.runtime.listApprovals({ ...filter, limit });
      },
      async decide(approvalId, decision, actor) {
        checkOneOf("decision", decision, ["approve", "deny"]);
        const name = checkActor(actor).slice("operator:".length);
        const outcome = await approvals.decide(approvalId, decision, { kind: "operator", name });
        if (outcome.kind === "refused") {
          throw new SwitchboardError(
            outcome.reason === "unknown" ? "not_found" : "state_conflict",
            outcome.notice,
            {
              details: { approvalId },
            },
          );
        }
        changed(options.onApprovalDecided);
        return outcome.approval;
      },
    },
    runs: {
      async list(filter) {
        checkOneOf("state", filter.state, RUN_STATES);
        const limit = checkLimit(
          "limit",
          filter.limit,
          OPERATOR_LIMITS.runs.default,
          OPERATOR_LIMITS.runs.max,
        );
        const before = filter.cursor === undefined ? undefined : decodeCursor("runs", filter.cursor)[0];
        const rows = await queries.listRuns({
          state: filter.state,
          conversationId: filter.conversationId,
          beforeQueueSeq: before,
          limit: limit + 1,
        });
        const page = toPage(rows, limit, "runs", (run) => [run.queueSeq]);
        const models = new Map<string, string>();
        for (const step of await queries.listSteps(page.items.map((r) => r.id)))
          models.set(step.runId, step.model);
        return { ...page, items: page.items.map((run) => ({ ...run, model: models.get(run.id) ?? null })) };
      },
      async show(runId) {
        const view = await stores.runtime.loadRun(runId);
        if (!view) return null;
        const parts = view.answer?.parts ?? [];
        const steps = (await queries.listSteps([runId])).map(({ runId: _, ...step }) => step);
        const handle = readRunContext(view.run.context)?.child?.handle;
        return {
          run: view.run,
          answerText: answerText(parts),
          usage: view.run.usage,
          steps,
          toolCalls: toolCallSummaries(parts),
          children: await childTree(stores.runtime, { parentRunId: runId }),
          childOf: handle === undefined ? null : await stores.runtime.loadChild(handle),
        };
      },
    },

    conversations: {
      async list(filter) {
        const { default: fallback, max } = OPERATOR_LIMITS.conversations;
        const limit = checkLimit("limit", filter.limit, fallback, max);
        const before = filter.cursor === undefined ? undefined : decodeCursor("conversations", filter.cursor);
        const matching = checkConversationQuery("query", filter.query);
        const rows = await queries.listConversations({
          ...(before ? { before } : {}),
          ...(matching === undefined ? {} : { matching }),
          limit: limit + 1,
        });
        const page = toPage(rows, limit, "conversations", (c) => [c.lastActivityAtMs ?? c.createdAtMs, c.id]);
        return { ...page, items: await Promise.all(page.items.map(withLatest)) };
      },
      async show(conversationId, page) {
        const { default: fallback, max } = OPERATOR_LIMITS.messages;
        const limit = checkLimit("limit", page.limit, fallback, max);
        const beforeOrder = page.cursor === undefined ? undefined : decodeCursor("messages", page.cursor)[0];
        const conversation = await queries.conversationSummary(conversationId);
        if (!conversation) return null;
        const rows = await queries.listMessagesNewestFirst(conversationId, { beforeOrder, limit: limit + 1 });
        const { items, nextCursor } = toPage(rows, limit, "messages", (item) => [item.order]);
        const [settings, commands, children] = await Promise.all([
          stores.runtime.loadConversationSettings(conversationId),
          queries.listCommandInputs(conversationId, 200),
          childTree(stores.runtime, { parentConversationId: conversationId }),
        ]);
        return { conversation, model: settings.model ?? null, items, nextCursor, commands, children };
      },
      async setModel(conversationId, model, actor) {
        checkActor(actor);
        const names =
          typeof options.modelNames === "function" ? options.modelNames() : (options.modelNames ?? []);
        if (model !== null && !names.includes(model)) {
          throw new SwitchboardError(
            "input_invalid",
            names.length === 0
              ? `No models can be picked: name them in SWITCHBOARD_CONFIG "models" (e.g. {"models": {"smart": "openrouter:anthropic/claude-sonnet-4"}}).`
              : `Model ${JSON.stringify(model)} is not one of ${names.join(", ")} (SWITCHBOARD_CONFIG "models").`,
            { details: { field: "model" } },
          );
        }
        if (!(await queries.conversationSummary(conversationId))) {
          throw new SwitchboardError(
            "not_found",
            `No conversation ${conversationId}. List conversations with \`switchboard conversations list\`.`,
            { details: { conversationId } },
          );
        }
        await stores.runtime.saveConversationSettings(
          conversationId,
          { model: model ?? undefined },
          clock.now(),
        );
        return { conversationId, model };
      },
      async export(conversationId) {
        if (!(await queries.conversationSummary(conversationId))) return null;
        return readConversationExport(
          {
            runtime: stores.runtime,
            schedules: (id) => queries.listSchedules({ conversationId: id, includeEnded: true }),
            outbox: async (id) => (await stores.outbox.list({ conversationId: id, limit: 1000 })).reverse(),
          },
          conversationId,
          clock.now(),
        );
      },
      async branch(conversationId, throughRunId, actor) {
        checkActor(actor);
        const source = await this.export(conversationId);
        if (!source) {
          throw new SwitchboardError(
            "not_found",
            `No conversation ${conversationId}. List conversations with \`switchboard conversations list\`.`,
            { details: { conversationId } },
          );
        }
        return branchConversation(stores.runtime, clock, source, throughRunId);
      },
      async import(text, actor) {
        checkActor(actor);
        return importConversation(stores.runtime, clock, text);
      },
      async purge(conversationId, actor) {
        checkActor(actor);
        const summary = await queries.conversationSummary(conversationId);
        if (!summary) {
          const earlier = await stores.runtime.loadPurge(conversationId);
          if (earlier) return { outcome: "already_purged", ...earlier };
          throw new SwitchboardError(
            "not_found",
            `No conversation ${conversationId}. List conversations with \`switchboard conversations list\`.`,
            { details: { conversationId } },
          );
        }
        // Later messages of its chat start a fresh conversation instead of joining the one going away.
        if (summary.key !== null) await stores.runtime.rotateConversationKey(summary.key, clock.now());
        // Its child agents stop, deliver nothing, and their conversations (what it delegated) go too.
        const delegated = await delegatedConversations(stores.runtime, conversationId);
        const stopped = await stores.runtime.cancelChildren(
          { parentConversationId: conversationId },
          clock.now(),
        );
        for (const run of stopped) await options.stopRun?.(run.conversationId, run.runId);
        const forgetOptions = {
          store: stores.runtime,
          clock,
          ...(options.stopRun ? { stopRun: options.stopRun } : {}),
          ...(options.blobs ? { blobs: options.blobs } : {}),
        };
        const result = await forgetConversation(forgetOptions, conversationId, actor);
        for (const child of delegated) await forgetConversation(forgetOptions, child, actor);
        outboxChanged();
        schedulesChanged(null);
        return result;
      },
    },

    async search(query, filter) {
      const { default: fallback, max } = OPERATOR_LIMITS.search;
      const limit = checkLimit("limit", filter.limit, fallback, max);
      const parsed = parseSearchQuery(query);
      if (!parsed.ok)
        throw new SwitchboardError("input_invalid", parsed.error, { details: { field: "query" } });
      return stores.search.searchHistory({
        query: parsed.query,
        scope: { kind: "all", ...(filter.conversationId ? { conversationId: filter.conversationId } : {}) },
        limit,
      });
    },

    outbox: {
      async list(filter) {
        checkOneOf("state", filter.state, OUTBOX_STATES);
        const { default: fallback, max } = OPERATOR_LIMITS.outbox;
        const limit = checkLimit("limit", filter.limit, fallback, max);
        const before = filter.cursor === undefined ? undefined : decodeCursor("outbox", filter.cursor);
        const rows = await queries.listOutbox({
          state: filter.state,
          conversationId: filter.conversationId,
          ...(before ? { before } : {}),
          limit: limit + 1,
        });
        return toPage(rows, limit, "outbox", (r) => [r.createdAtMs, r.ordinal, r.id]);
      },
      show: (idOrKey) => stores.outbox.show(idOrKey),
      async retry(id, actor, note) {
        const record = await stores.outbox.retry(id, checkActor(actor), clock.now(), note);
        outboxChanged();
        return record;
      },
      async resolve(id, outcome, actor, note) {
        checkOneOf("outcome", outcome, ["delivered", "failed"]);
        const record = await stores.outbox.resolve(
          id,
          outcome,
          checkActor(actor),
          checkNote("note", note),
          clock.now(),
        );
        outboxChanged();
        return record;
      },
      async cancel(id, actor, note) {
        const record = await stores.outbox.cancel(id, checkActor(actor), clock.now(), note);
        outboxChanged();
        return record;
      },
    },

    schedules: {
      list: (filter) =>
        queries.listSchedules({
          ...(filter.conversationId === undefined ? {} : { conversationId: filter.conversationId }),
          includeEnded: filter.includeEnded ?? false,
        }),
      async runs(scheduleId, limit) {
        const { default: fallback, max } = OPERATOR_LIMITS.occurrences;
        const checked = checkLimit("limit", limit, fallback, max);
        await existingSchedule(scheduleId);
        return schedules.occurrences(scheduleId, checked);
      },
      async pause(scheduleId) {
        await existingSchedule(scheduleId);
        return schedulesChanged(await schedules.pause(scheduleId));
      },
      async resume(scheduleId) {
        await existingSchedule(scheduleId);
        return schedulesChanged(await schedules.resume(scheduleId));
      },
      async cancel(scheduleId) {
        await existingSchedule(scheduleId);
        return schedulesChanged(await schedules.cancel(scheduleId));
      },
    },
  };
}
