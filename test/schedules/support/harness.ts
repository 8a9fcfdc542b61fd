import { createScheduleService, type ScheduleServiceOptions } from "../../../schedules/service.ts";
import type { ScheduleEvent } from "../../../schedules/types.ts";
import { createSqliteScheduleRepository } from "../../../src/store/sqlite/schedules.ts";
import { FakeClock } from "../../support/fake-clock.ts";
import { openTestDatabase } from "./db.ts";
import { recordingDispatch } from "./dispatcher.ts";

export const CONVERSATION = {
  conversationId: "conv_1",
  chatKey: "telegram:1:dm:42",
  replyTarget: "tg:42",
  channel: "telegram" as const,
};

/** A service on a temp SQLite file with fake time and a recording dispatcher. */
export function createHarness(startIso: string, options: Partial<ScheduleServiceOptions> = {}) {
  const database = openTestDatabase();
  const time = new FakeClock(Date.parse(startIso));
  const dispatcher = recordingDispatch();
  const events: ScheduleEvent[] = [];
  const repository = createSqliteScheduleRepository(database.db);
  const service = createScheduleService({
    repository,
    dispatch: dispatcher.dispatch,
    clock: time,
    owner: "owner-a",
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { database, time, dispatcher, events, repository, service };
}
