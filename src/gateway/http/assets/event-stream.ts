/** Reads a Server-Sent Events response from fetch(), which (unlike EventSource) can send headers. */

export interface EventFrame {
  id: string | null;
  data: string | null;
}

/** Calls `onFrame` for each frame until the stream ends; rejects when reading fails. */
export async function readEventStream(
  response: Response,
  onFrame: (frame: EventFrame) => void,
): Promise<void> {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      onFrame(parseFrame(buffer.slice(0, end)));
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
    }
  }
}

export function parseFrame(frame: string): EventFrame {
  let id: string | null = null;
  const data: string[] = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("id:")) id = line.slice(3).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return { id, data: data.length ? data.join("\n") : null };
}
