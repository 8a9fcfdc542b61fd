/** Server-Sent Events for the operator API: runtime events with their ledger seq as the event id. */
import type { RuntimeEvent } from "../../runtime/events.ts";

const encoder = new TextEncoder();

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
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (chunk: string): void => {
        if (abort.signal.aborted) return;
        try {
          controller.enqueue(encoder.encode(chunk));
        } catch {
          abort.abort();
        }
      };
      write("retry: 2000\n\n");
      heartbeat = setInterval(() => write(": heartbeat\n\n"), options.heartbeatMs);
      const pump = async () => {
        try {
          for await (const event of options.events) {
            if (abort.signal.aborted) break;
            write(formatRuntimeEvent(event));
          }
        } catch (error) {
          if (!abort.signal.aborted) options.onError(error);
        } finally {
          clearInterval(heartbeat);
          abort.abort();
          try {
            controller.close();
          } catch {
            // The client closed it first.
          }
        }
      };
      void pump();
    },
    cancel() {
      clearInterval(heartbeat);
      abort.abort();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      "x-accel-buffering": "no",
    },
  });
}
