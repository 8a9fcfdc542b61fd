/**
 * AI SDK tools that let the agent schedule work in the conversation it is answering. Every tool is
 * scoped to that one conversation: another conversation's schedule id is answered exactly like an
 * unknown one. Refusals are tool outputs `{ ok: false, error, hint }` the model can act on.
 */
import { tool, zodSchema } from "ai";
import { z } from "zod";
import { isSwitchboardError } from "../src/errors.ts";
import { describeTiming } from "./format.ts";
import { parseDateTimeMs } from "./parse.ts";
import type { ScheduleWhen } from "./plan.ts";
import type { ScheduleService } from "./service.ts";
import { belongsToChat, type Schedule, type ScheduleTarget } from "./types.ts";

export interface ScheduleToolsOptions {
  service: ScheduleService;
  conversation: ScheduleTarget;
  /** Throws when the calling run lost ownership; called before every write. */
  fence: () => Promise<void>;
  /** The conversation's IANA zone, used for times without an offset; null when unknown. */
  timezone?: string | null;
}

/** The tools createScheduleTools makes; schedule_list only reads, so it is safe to run again. */
export const SCHEDULE_TOOL_NAMES = [
  "schedule_after",
  "schedule_at",
  "schedule_every",
  "schedule_list",
  "schedule_cancel",
] as const;

export type ToolRefusal = { ok: false; error: string; hint: string };

/** What the model sees of a schedule. */
export interface ScheduleView {
  id: string;
  timing: string;
  /** ISO 8601 instant (UTC) of the next run; null when it will not run again. */
  nextRunAt: string | null;
  timezone: string | null;
  state: Schedule["state"];
  prompt: string;
}

function toView(schedule: Schedule): ScheduleView {
  const nextMs = schedule.retryAtMs ?? schedule.nextAtMs;
  return {
    id: schedule.id,
    timing: describeTiming(schedule),
    nextRunAt: nextMs === null ? null : new Date(nextMs).toISOString(),
    timezone: schedule.timezone,
    state: schedule.state,
    prompt: schedule.prompt,
  };
}

const promptField = z
  .string()
  .min(1)
  .describe("An instruction to yourself for when it fires, e.g. 'Summarise my unread email.'");

// Built once per process: the AI SDK converts a schema to JSON Schema on first use and keeps it,
// so tools built per run reuse the conversion instead of redoing it on every model call.
const afterInput = zodSchema(
  z.object({
    seconds: z.number().int().positive().describe("Delay in seconds from now, e.g. 600 for ten minutes."),
    prompt: promptField,
  }),
);
const atInput = zodSchema(
  z.object({
    at: z
      .string()
      .describe(
        "ISO 8601 date-time, best with a UTC offset: 2026-12-01T09:00:00+01:00. Without an offset it is read in the conversation's time zone.",
      ),
    prompt: promptField,
  }),
);
const everyInput = zodSchema(
  z.object({
    cron: z
      .string()
      .describe("minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5' for weekdays at 09:00."),
    timezone: z.string().describe("IANA time zone the cron fields are read in, e.g. Europe/Berlin."),
    prompt: promptField,
  }),
);
const listInput = zodSchema(z.object({}));
const cancelInput = zodSchema(
  z.object({ id: z.string().min(1).describe("A schedule id from schedule_list.") }),
);

export function createScheduleTools(options: ScheduleToolsOptions) {
  const { service, conversation, fence } = options;

  /** Runs a write; service refusals become tool output, anything else (fence loss, storage) throws. */
  async function refusing<T>(write: () => Promise<T>): Promise<T | ToolRefusal> {
    try {
      return await write();
    } catch (error) {
      if (
        isSwitchboardError(error) &&
        (error.code === "input_invalid" || error.code === "state_conflict" || error.code === "not_found")
      ) {
        const hint =
          typeof error.details?.hint === "string" ? error.details.hint : "Correct the input and try again.";
        return { ok: false, error: error.message, hint };
      }
      throw error;
    }
  }

  async function createFor(when: ScheduleWhen, prompt: string, timezone: string | undefined) {
    await fence();
    return refusing(async () => {
      const schedule = await service.create({ ...conversation, createdBy: "agent", prompt, when, timezone });
      return { ok: true as const, schedule: toView(schedule) };
    });
  }

  const notInConversation = (id: string): ToolRefusal => ({
    ok: false,
    error: `No schedule with id ${id} in this conversation.`,
    hint: "Call schedule_list to see this conversation's schedule ids.",
  });

  return {
    schedule_after: tool({
      description: "Run a prompt once in this conversation after a delay.",
      inputSchema: afterInput,
      execute: ({ seconds, prompt }) =>
        createFor({ kind: "after", delayMs: seconds * 1000 }, prompt, options.timezone ?? undefined),
    }),

    schedule_at: tool({
      description: "Run a prompt once in this conversation at a date and time.",
      inputSchema: atInput,
      execute: async ({ at, prompt }) => {
        const resolved = parseDateTimeMs(at, options.timezone ?? null);
        if (!resolved.ok) {
          const refusal: ToolRefusal = {
            ok: false,
            error: resolved.error,
            hint:
              resolved.reason === "zone"
                ? "Add a UTC offset, e.g. 2026-12-01T09:00:00+01:00, or ask the user for their time zone."
                : "Use ISO 8601, e.g. 2026-12-01T09:00:00+01:00.",
          };
          return refusal;
        }
        return createFor({ kind: "at", atMs: resolved.atMs }, prompt, options.timezone ?? undefined);
      },
    }),

    schedule_every: tool({
      description: "Run a prompt repeatedly in this conversation on a cron schedule in a time zone.",
      inputSchema: everyInput,
      execute: ({ cron, timezone, prompt }) =>
        createFor({ kind: "cron", expression: cron }, prompt, timezone),
    }),

    schedule_list: tool({
      description: "List this conversation's active and paused schedules.",
      inputSchema: listInput,
      execute: async () => {
        const schedules = await service.listForChat(conversation);
        return { ok: true as const, schedules: schedules.map(toView) };
      },
    }),

    schedule_cancel: tool({
      description: "Cancel one of this conversation's schedules by id.",
      inputSchema: cancelInput,
      execute: async ({ id }) => {
        const schedule = await service.get(id);
        if (!schedule || !belongsToChat(schedule, conversation)) return notInConversation(id);
        await fence();
        return refusing(async () => ({ ok: true as const, schedule: toView(await service.cancel(id)) }));
      },
    }),
  } satisfies Record<(typeof SCHEDULE_TOOL_NAMES)[number], unknown>;
}
