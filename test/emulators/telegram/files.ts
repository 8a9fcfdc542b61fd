/**
 * Files the emulated Bot API serves: `getFile` (with Telegram's 20 MB refusal) and the download
 * at `/file/bot<token>/<file_path>`, with the faults of ../file-host.ts.
 */
import { type FileFault, FileHost } from "../file-host.ts";
import { type ApiAnswer, apiError, ok, type Params } from "./bot-api.ts";

export type { FileFault } from "../file-host.ts";

/** Telegram's getFile refuses larger files. */
export const GET_FILE_MAX_BYTES = 20 * 1024 * 1024;

export class EmulatedFiles {
  private readonly host = new FileHost();

  /** Makes `fileId` downloadable; `fault` changes how its downloads are answered. */
  add(fileId: string, bytes: Uint8Array, fault?: FileFault): void {
    this.host.add(fileId, bytes, fault, `documents/file_${this.host.size + 1}`);
  }

  /** How many downloads of `fileId` began, and how many sent every byte. */
  downloads(fileId: string): { started: number; completed: number } {
    return this.host.downloads(fileId);
  }

  getFile(params: Params): ApiAnswer {
    const fileId = params.file_id;
    if (typeof fileId !== "string" || fileId === "")
      return apiError(400, "Bad Request: file_id not specified");
    const file = this.host.get(fileId);
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
    return this.host.serve(path);
  }
}
