import type { Logger } from "../util/log.ts";
import type { Fence, RuntimeStore } from "./store.ts";
import type { FilePart, InputPart, Message, PreparedFile } from "./types.ts";

/** Kinds of input a model may take besides text (SWITCHBOARD_MODEL_INPUTS). */
export type ModelInputKind = "image" | "file" | "audio";

/**
 * What a model accepts when SWITCHBOARD_MODEL_INPUTS does not say, by its spec's provider:
 * OpenRouter's default models read images and PDFs; an openai-compatible server is assumed to
 * read images (most vision models behind one do); the offline model reads text only.
 */
export function defaultModelInputs(spec: string): ReadonlySet<ModelInputKind> {
  if (spec.startsWith("openrouter:")) return new Set(["image", "file"]);
  if (spec.startsWith("openai-compatible:")) return new Set(["image"]);
  return new Set();
}

/**
 * What the runtime needs to turn attachments into model input; the gateway builds it (src/media)
 * from the blob store, the channels' downloads and the transcription model.
 */
export interface MediaInputs {
  /**
   * Fetches and prepares one attachment of a run's input: download, store, sniff, scale or
   * transcribe. Failures are outcomes (`refused`, `failed`, or a `note`), never throws, except
   * when `signal` aborts (shutdown): then the part stays unprepared and is prepared again later.
   */
  prepare(request: {
    part: FilePart;
    context: unknown;
    runId: string;
    conversationId: string;
    signal: AbortSignal;
  }): Promise<PreparedFile>;
  /** A blob's bytes, null when it is gone (removed by retention). */
  read(blobId: string): Promise<Uint8Array | null>;
  /** What the model accepts besides text. */
  readonly accepts: ReadonlySet<ModelInputKind>;
}

/**
 * Prepares every attachment of the run's inputs that is not prepared yet, one at a time, saving
 * each outcome (fenced) before the next: a crash mid-download leaves that part unprepared, and the
 * next execution fetches it again; a prepared part is never fetched twice.
 */
export async function prepareInputs(options: {
  store: RuntimeStore;
  media: MediaInputs;
  logger: Logger;
  fence: Fence;
  conversationId: string;
  context: unknown;
  inputs: readonly Message[];
  signal: AbortSignal;
}): Promise<Message[]> {
  const { store, media, fence, signal } = options;
  const out: Message[] = [];
  for (const message of options.inputs) {
    const parts: InputPart[] = message.parts.filter(
      (p): p is InputPart => p.type === "text" || p.type === "file",
    );
    let changed = false;
    for (const [index, part] of parts.entries()) {
      if (part.type !== "file" || part.prepared) continue;
      if (signal.aborted) break;
      let prepared: PreparedFile;
      const startedAtMs = performance.now();
      try {
        prepared = await media.prepare({
          part,
          context: options.context,
          runId: fence.runId,
          conversationId: options.conversationId,
          signal,
        });
      } catch (error) {
        if (signal.aborted) break;
        throw error;
      }
      if (signal.aborted) break;
      parts[index] = {
        ...part,
        ...(prepared.status === "fetched"
          ? { mediaType: prepared.mediaType, sizeBytes: prepared.sizeBytes }
          : {}),
        prepared,
      };
      await store.saveInputParts(fence, message.id, parts);
      changed = true;
      options.logger.info("media.prepared", {
        runId: fence.runId,
        status: prepared.status,
        durationMs: Math.round(performance.now() - startedAtMs),
        ...(prepared.status === "fetched"
          ? { mediaType: prepared.mediaType, sizeBytes: prepared.sizeBytes }
          : {}),
      });
    }
    out.push(changed ? { ...message, parts } : message);
  }
  return out;
}

/** True when some attachment of `inputs` still needs preparing. */
export function needsPreparation(inputs: readonly Message[]): boolean {
  return inputs.some((m) => m.parts.some((p) => p.type === "file" && !p.prepared));
}

/** Lines the user must read whatever the model writes (a refused file, a missing setting). */
export function userNotices(inputs: readonly Message[]): string[] {
  return inputs.flatMap((m) =>
    m.parts.flatMap((p) => (p.type === "file" && p.prepared?.userNotice ? [p.prepared.userNotice] : [])),
  );
}

/** Blob ids the prompt may show as image or file parts, for loading before the model call. */
export function shownBlobIds(messages: readonly Message[]): string[] {
  return messages.flatMap((m) =>
    m.role !== "user"
      ? []
      : m.parts.flatMap((p) => {
          if (p.type !== "file" || p.prepared?.status !== "fetched") return [];
          return [p.prepared.imageBlobId ?? p.prepared.blobId];
        }),
  );
}
