/** Runs a parsed schedule command for one conversation and words the chat reply. */
import { isSwitchboardError } from "../src/errors.ts";
import { formatScheduleCreated, formatScheduleList } from "./format.ts";
import type { ScheduleCommand } from "./parse.ts";
import type { ScheduleService } from "./service.ts";
import { belongsToChat, type ScheduleTarget } from "./types.ts";

export interface CommandScope {
  service: ScheduleService;
  conversation: ScheduleTarget;
  /** The conversation's IANA zone, or null when unset. */
  timezone: string | null;
  /** Persists the conversation's zone (the gateway owns conversation settings). */
  setTimezone(timezone: string): Promise<void>;
  /** Id for a schedule this command creates, stable across a repeated run of the same command. */
  scheduleId?: string;
}

/**
 * The reply text for `command`. Refusals (limits, unknown ids, bad zones) become replies that say
 * what to do; other errors propagate so ingress does not acknowledge a command it failed to run.
 */
export async function runScheduleCommand(command: ScheduleCommand, scope: CommandScope): Promise<string> {
  const { service, conversation } = scope;
  try {
    switch (command.type) {
      case "create": {
        const schedule = await service.create({
          ...(scope.scheduleId === undefined ? {} : { id: scope.scheduleId }),
          ...conversation,
          createdBy: "user",
          prompt: command.prompt,
          when: command.when,
          timezone: command.timezone,
        });
        return formatScheduleCreated(schedule, scope.timezone);
      }
      case "list":
        return formatScheduleList(await service.listForChat(conversation), scope.timezone);
      case "cancel": {
        const schedule = await service.get(command.id);
        // Another chat's schedule is reported exactly like a missing one.
        if (!schedule || !belongsToChat(schedule, conversation)) {
          return `No schedule ${command.id} in this chat. /schedules lists its schedules.`;
        }
        await service.cancel(command.id);
        return `Cancelled ${command.id}.`;
      }
      case "set-timezone":
        await scope.setTimezone(command.timezone);
        return `Time zone set to ${command.timezone}.`;
    }
  } catch (error) {
    if (
      isSwitchboardError(error) &&
      (error.code === "input_invalid" || error.code === "state_conflict" || error.code === "not_found")
    ) {
      const hint = typeof error.details?.hint === "string" ? ` ${error.details.hint}` : "";
      return `${error.message}${hint}`;
    }
    throw error;
  }
}
