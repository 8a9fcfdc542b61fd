/** One Server-Sent Events response, shared by the operator API and the web channel. */
import { type Clock, systemClock, type Timer } from "./clock.ts";

export interface EventStreamOptions {
  /** Ends the stream: the client went, or the server is stopping. */
  signal: AbortSignal;
  /** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
  heartbeatMs: number;
  /** Times the heartbeat. Default the system clock. */
  clock?: Pick<Clock, "every">;
  /**
   * Starts the source: `write` sends one frame of SSE text, `end` closes the stream from the
   * source's side. Returns the cleanup that runs once, however the stream ends.
   */
  open(write: (frame: string) => void, end: () => void): () => void;
}

const encoder = new TextEncoder();

/**
 * The abort of one long response: fired when the client goes or the server stops (`track` registers
 * it with the server until it fires).
 */
export function streamAbort(
  request: Request,
  track: (abort: AbortController) => () => void,
): AbortController {
  const abort = new AbortController();
  abort.signal.addEventListener("abort", track(abort), { once: true });
  request.signal.addEventListener("abort", () => abort.abort(), { once: true });
  return abort;
}

export function eventStreamResponse(options: EventStreamOptions): Response {
  let cleanup: (() => void) | undefined;
  let heartbeat: Timer | undefined;
  let closed = false;
  let close = () => {};
  const finish = () => {
    if (closed) return;
    closed = true;
    heartbeat?.cancel();
    options.signal.removeEventListener("abort", close);
    cleanup?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (frame: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(frame));
        } catch {
          finish();
        }
      };
      close = () => {
        finish();
        try {
          controller.close();
        } catch {
          // Already closed by the client.
        }
      };
      if (options.signal.aborted) return close();
      options.signal.addEventListener("abort", close, { once: true });
      write("retry: 2000\n\n");
      const stop = options.open(write, close);
      // A source that ended while opening already ran finish(), before its cleanup was known.
      if (closed) return stop();
      cleanup = stop;
      heartbeat = (options.clock ?? systemClock).every(options.heartbeatMs, () => write(": heartbeat\n\n"));
    },
    cancel() {
      finish();
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
