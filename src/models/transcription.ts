import { type TranscriptionModel, transcribe } from "ai";
import { SwitchboardError } from "../errors.ts";

type TranscriptionModelV4 = Extract<TranscriptionModel, { specificationVersion: "v4" }>;
type CallOptions = Parameters<TranscriptionModelV4["doGenerate"]>[0];
type CallResult = Awaited<ReturnType<TranscriptionModelV4["doGenerate"]>>;

/** Ogg/Opus is what Telegram voice notes are; the extension tells the server the container. */
const EXTENSIONS: Record<string, string> = {
  "audio/ogg": "ogg",
  "audio/opus": "ogg",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "audio/x-m4a": "m4a",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/webm": "webm",
  "video/webm": "webm",
  "audio/flac": "flac",
};

/**
 * An OpenAI-compatible `/audio/transcriptions` endpoint (Whisper and the servers that copy its
 * API) as an AI SDK transcription model, so switchboard transcribes through the SDK's `transcribe`.
 */
export function openAiCompatibleTranscriptionModel(options: {
  baseUrl: string;
  apiKey?: string;
  modelId: string;
}): TranscriptionModelV4 {
  return {
    specificationVersion: "v4",
    provider: "openai-compatible.transcription",
    modelId: options.modelId,
    async doGenerate(call: CallOptions): Promise<CallResult> {
      const audio = typeof call.audio === "string" ? Buffer.from(call.audio, "base64") : call.audio;
      const form = new FormData();
      form.append("model", options.modelId);
      form.append(
        "file",
        new Blob([new Uint8Array(audio)], { type: call.mediaType }),
        `audio.${EXTENSIONS[call.mediaType] ?? "bin"}`,
      );
      form.append("response_format", "json");
      const response = await fetch(`${options.baseUrl.replace(/\/$/, "")}/audio/transcriptions`, {
        method: "POST",
        body: form,
        headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
        ...(call.abortSignal ? { signal: call.abortSignal } : {}),
      });
      const body = (await response.json().catch(() => null)) as { text?: unknown; duration?: unknown } | null;
      if (!response.ok || typeof body?.text !== "string") {
        throw new SwitchboardError(
          "provider_failed",
          `the transcription server answered HTTP ${response.status}${response.ok ? " without a text" : ""}`,
          { retryable: response.status >= 500 || response.status === 429 },
        );
      }
      return {
        text: body.text,
        segments: [],
        language: undefined,
        durationInSeconds: typeof body.duration === "number" ? body.duration : undefined,
        warnings: [],
        response: { timestamp: new Date(), modelId: options.modelId },
      };
    },
  };
}

/** Transcribes `audio` with `model` through the AI SDK. */
export async function transcribeAudio(
  model: TranscriptionModelV4,
  audio: Uint8Array,
  signal: AbortSignal,
): Promise<string> {
  const result = await transcribe({ model, audio, abortSignal: signal, maxRetries: 1 });
  return result.text;
}
