import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import { SwitchboardError } from "../errors.ts";
import { answerText } from "../runtime/types.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { Clock } from "../util/clock.ts";
import { branchConversation, importConversation, readConversationExport } from "./export.ts";
import { forgetConversation } from "./forget.ts";
import { OPERATOR_LIMITS } from "./limits.ts";
import type { OperatorService } from "./types.ts";
import {
  checkActor,
  checkCursor,
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
  stores: Pick<StoreBackend, "runtime" | "outbox" | "schedules" | "operator">;
  clock: Clock;
  /**
   * Called after an operator retried, resolved or cancelled an outbox record, so a running
   * delivery worker looks at it now rather than at its next wake-up.
   */
  onOutboxChanged?: () => void;
  /** Called after an operator paused, resumed or cancelled a schedule, so a scheduler re-arms now. */
  onSchedulesChanged?: () => void;
  /**
   * The model names `conversations.setModel` accepts (SWITCHBOARD_CONFIG `models`), or how to read
   * them when first needed (the CLI reads the config file only for set-model). Default none.
   */
  modelNames?: readonly string[] | (() => readonly string[]);
  /** Ends a run now (the gateway's runtime); without it a purge commits a stop request and waits. */
  stopRun?: (conversationId: string, runId: string) => Promise<unknown>;
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

  return {
    runs: {
      async list(filter) {
        checkOneOf("state", filter.state, RUN_STATES);
        const limit = checkLimit(
          "limit",
          filter.limit,
          OPERATOR_LIMITS.runs.default,
          OPERATOR_LIMITS.runs.max,
        );
        return queries.listRuns({ ...filter, limit });
      },
      async show(runId) {
        const view = await stores.runtime.loadRun(runId);
        if (!view) return null;
        return { run: view.run, answerText: answerText(view.answer?.parts ?? []), usage: view.run.usage };
      },
    },

    conversations: {
      async list(filter) {
        const { default: fallback, max } = OPERATOR_LIMITS.conversations;
        return queries.listConversations(checkLimit("limit", filter.limit, fallback, max));
      },
      async show(conversationId, page) {
        const { default: fallback, max } = OPERATOR_LIMITS.messages;
        const limit = checkLimit("limit", page.limit, fallback, max);
        const afterOrder = checkCursor("after", page.afterOrder);
        const conversation = await queries.conversationSummary(conversationId);
        if (!conversation) return null;
        const { items, nextAfterOrder } = await stores.runtime.listMessages(conversationId, {
          afterOrder,
          limit,
        });
        const settings = await stores.runtime.loadConversationSettings(conversationId);
        return { conversation, model: settings.model ?? null, items, nextAfterOrder };
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
        const result = await forgetConversation(
          { store: stores.runtime, clock, ...(options.stopRun ? { stopRun: options.stopRun } : {}) },
          conversationId,
          actor,
        );
        outboxChanged();
        schedulesChanged(null);
        return result;
      },
    },

    outbox: {
      async list(filter) {
        checkOneOf("state", filter.state, OUTBOX_STATES);
        const { default: fallback, max } = OPERATOR_LIMITS.outbox;
        return stores.outbox.list({ ...filter, limit: checkLimit("limit", filter.limit, fallback, max) });
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
