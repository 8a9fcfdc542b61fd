/** Server-Sent Events for the operator API: runtime events with their ledger seq as the event id. */
import type { RuntimeEvent } from "../../runtime/events.ts";
import { eventStreamResponse } from "../../util/event-stream.ts";

/** One event in the wire format; durable events carry `id: <seq>` so a reconnect can resume. */
export function formatRuntimeEvent(event: RuntimeEvent): string {
  const id = event.durable ? `id: ${event.seq}\n` : "";
  return `${id}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface RuntimeEventStreamOptions {
  /** Started with `abort.signal`; must end soon after it aborts. */
  events: AsyncIterable<RuntimeEvent>;
  /** Aborted when the client goes, the server stops, or the events end. */
  abort: AbortController;
  heartbeatMs: number;
  /** Told when the event source fails (the stream then ends). */
  onError(error: unknown): void;
}

export function runtimeEventStream(options: RuntimeEventStreamOptions): Response {
  const { abort } = options;
  return eventStreamResponse({
    signal: abort.signal,
    heartbeatMs: options.heartbeatMs,
    open(write, end) {
      void (async () => {
        try {
          for await (const event of options.events) {
            if (abort.signal.aborted) break;
            write(formatRuntimeEvent(event));
          }
        } catch (error) {
          if (!abort.signal.aborted) options.onError(error);
        } finally {
          end();
        }
      })();
      return () => abort.abort();
    },
  });
}
