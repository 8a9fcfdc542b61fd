/**
 * Files the emulated Bot API serves: `getFile` (with Telegram's 20 MB refusal) and the download
 * at `/file/bot<token>/<file_path>`, with faults a test arms per file: an HTTP status, a hang
 * after the first bytes, or a slow trickle (to SIGKILL a gateway mid-download).
 */
import { type ApiAnswer, apiError, ok, type Params } from "./bot-api.ts";

/** Telegram's getFile refuses larger files. */
export const GET_FILE_MAX_BYTES = 20 * 1024 * 1024;

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

interface StoredFile {
  bytes: Uint8Array;
  path: string;
  fault?: FileFault;
  downloads: number;
  /** Downloads whose every byte was sent. */
  completed: number;
}

export class EmulatedFiles {
  private readonly byId = new Map<string, StoredFile>();
  private readonly byPath = new Map<string, StoredFile>();

  /** Makes `fileId` downloadable; `fault` changes how its downloads are answered. */
  add(fileId: string, bytes: Uint8Array, fault?: FileFault): void {
    const file: StoredFile = {
      bytes,
      path: `documents/file_${this.byId.size + 1}`,
      downloads: 0,
      completed: 0,
    };
    if (fault) file.fault = fault;
    this.byId.set(fileId, file);
    this.byPath.set(file.path, file);
  }

  /** How many downloads of `fileId` began, and how many sent every byte. */
  downloads(fileId: string): { started: number; completed: number } {
    const file = this.byId.get(fileId);
    return { started: file?.downloads ?? 0, completed: file?.completed ?? 0 };
  }

  getFile(params: Params): ApiAnswer {
    const fileId = params.file_id;
    if (typeof fileId !== "string" || fileId === "")
      return apiError(400, "Bad Request: file_id not specified");
    const file = this.byId.get(fileId);
    if (!file) return apiError(400, "Bad Request: invalid file_id");
    const described = {
      file_id: fileId,
      file_unique_id: `${fileId}-unique`,
      file_size: file.bytes.byteLength,
    };
    if (file.bytes.byteLength > GET_FILE_MAX_BYTES) return apiError(400, "Bad Request: file is too big");
    return ok({ ...described, file_path: file.path });
  }

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
