/**
 * File downloads an emulator serves (Telegram's file URL, Slack's url_private, Discord's
 * attachment URL), with faults a test arms per file: an HTTP status, a hang after the first bytes,
 * or a slow trickle (to SIGKILL a gateway mid-download). Counts downloads begun and finished.
 */

export interface FileFault {
  /** Answer the download with this status instead of the bytes. */
  status?: number;
  /** Send the headers and the first chunk, then nothing, ever. */
  hang?: boolean;
  /** Send the bytes in `chunkBytes` pieces `chunkDelayMs` apart. */
  trickle?: { chunkBytes: number; chunkDelayMs: number };
  /** How many downloads the fault applies to (default: all). */
  times?: number;
}

export interface HostedFile {
  bytes: Uint8Array;
  path: string;
  fault?: FileFault;
  downloads: number;
  /** Downloads whose every byte was sent. */
  completed: number;
}

export class FileHost {
  private readonly byId = new Map<string, HostedFile>();
  private readonly byPath = new Map<string, HostedFile>();

  /** Makes `fileId` downloadable at `path` (default: the id); `fault` changes how it is answered. */
  add(fileId: string, bytes: Uint8Array, fault?: FileFault, path = fileId): HostedFile {
    const file: HostedFile = { bytes, path, downloads: 0, completed: 0 };
    if (fault) file.fault = fault;
    this.byId.set(fileId, file);
    this.byPath.set(path, file);
    return file;
  }

  get(fileId: string): HostedFile | undefined {
    return this.byId.get(fileId);
  }

  get size(): number {
    return this.byId.size;
  }

  /** How many downloads of `fileId` began, and how many sent every byte. */
  downloads(fileId: string): { started: number; completed: number } {
    const file = this.byId.get(fileId);
    return { started: file?.downloads ?? 0, completed: file?.completed ?? 0 };
  }

  /** The download of the file at `path`; 404 when there is none. */
  serve(path: string): Response {
    const file = this.byPath.get(path);
    if (!file)
      return new Response(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }), {
        status: 404,
      });
    file.downloads += 1;
    const fault =
      file.fault && (file.fault.times === undefined || file.downloads <= file.fault.times)
        ? file.fault
        : undefined;
    if (fault?.status) return new Response("fault", { status: fault.status });
    const headers = {
      "content-length": String(file.bytes.byteLength),
      "content-type": "application/octet-stream",
    };
    const bytes = file.bytes;
    if (fault?.hang) {
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(bytes.subarray(0, Math.min(1024, bytes.byteLength)));
          },
        }),
        { headers },
      );
    }
    const trickle = fault?.trickle;
    if (!trickle) {
      file.completed += 1;
      return new Response(bytes as Uint8Array<ArrayBuffer>, { headers });
    }
    let at = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (at >= bytes.byteLength) {
            file.completed += 1;
            controller.close();
            return;
          }
          if (at > 0) await Bun.sleep(trickle.chunkDelayMs);
          controller.enqueue(bytes.subarray(at, at + trickle.chunkBytes));
          at += trickle.chunkBytes;
        },
      }),
      { headers },
    );
  }
}
