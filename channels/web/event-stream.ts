/** A minimal Server-Sent Events response for the browser's transcript stream. */

export interface EventStreamOptions {
  /** Aborts when the client goes (the request's signal) or the channel stops. */
  signal: AbortSignal;
  /** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
  heartbeatMs: number;
  /** Called once with the function that writes one event; returns the cleanup to run at the end. */
  open(send: (data: unknown) => void): () => void;
}

const encoder = new TextEncoder();

export function eventStreamResponse(options: EventStreamOptions): Response {
  let cleanup: (() => void) | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    options.signal.removeEventListener("abort", onAbort);
    cleanup?.();
  };
  let onAbort = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (chunk: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(chunk));
        } catch {
          finish();
        }
      };
      onAbort = () => {
        finish();
        try {
          controller.close();
        } catch {
          // Already closed by the client.
        }
      };
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener("abort", onAbort, { once: true });
      write("retry: 2000\n\n");
      cleanup = options.open((data) => write(`data: ${JSON.stringify(data)}\n\n`));
      heartbeat = setInterval(() => write(": heartbeat\n\n"), options.heartbeatMs);
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
