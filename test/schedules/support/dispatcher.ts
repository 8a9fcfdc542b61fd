import type { DispatchRequest, DispatchResult, ScheduleDispatch } from "../../../schedules/types.ts";

type Responder = (request: DispatchRequest) => Promise<DispatchResult> | DispatchResult;

/** A dispatch that records every request and answers with `respond` (default: ok with a run id). */
export function recordingDispatch(respond?: Responder) {
  const requests: DispatchRequest[] = [];
  let runs = 0;
  let responder: Responder = respond ?? (() => ({ status: "ok", runId: `run_${++runs}` }));
  const dispatch: ScheduleDispatch = async (request) => {
    requests.push(request);
    return responder(request);
  };
  return {
    dispatch,
    requests,
    respondWith(next: Responder) {
      responder = next;
    },
    /** Slots dispatched for one schedule, in order. */
    slotsOf(scheduleId: string): number[] {
      return requests.filter((r) => r.schedule.id === scheduleId).map((r) => r.scheduledForMs);
    },
  };
}
