/** Reads a Server-Sent Events response frame by frame (what a browser's EventSource would see). */

export interface SseFrame {
  id: string | null;
  event: string | null;
  data: string | null;
  /** Comment lines (`: heartbeat`). */
  comments: string[];
}

export class SseReader {
  private buffer = "";
  private readonly reader: ReadableStreamDefaultReader<string>;

  constructor(response: Response) {
    if (!response.body) throw new Error("The response has no body");
    this.reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next frame, or null when the stream ended. Rejects after `timeoutMs`. */
  async next(timeoutMs = 3000): Promise<SseFrame | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end >= 0) {
        const frame = parse(this.buffer.slice(0, end));
        this.buffer = this.buffer.slice(end + 2);
        return frame;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw new Error(`No SSE frame within ${timeoutMs} ms; buffered: ${JSON.stringify(this.buffer)}`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`No SSE frame within ${timeoutMs} ms`)), remaining);
      });
      try {
        const { done, value } = await Promise.race([this.reader.read(), timeout]);
        if (done) return null;
        this.buffer += value;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** The next frame that carries data (skipping `retry:` and heartbeat frames). */
  async nextData(timeoutMs = 3000): Promise<SseFrame> {
    for (;;) {
      const frame = await this.next(timeoutMs);
      if (frame === null) throw new Error("The event stream ended");
      if (frame.data !== null) return frame;
    }
  }

  async nextJson<T>(timeoutMs = 3000): Promise<T> {
    return JSON.parse((await this.nextData(timeoutMs)).data!) as T;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }
}

function parse(text: string): SseFrame {
  const frame: SseFrame = { id: null, event: null, data: null, comments: [] };
  const data: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith(":")) frame.comments.push(line.slice(1).trim());
    else if (line.startsWith("id:")) frame.id = line.slice(3).trim();
    else if (line.startsWith("event:")) frame.event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length > 0) frame.data = data.join("\n");
  return frame;
}
