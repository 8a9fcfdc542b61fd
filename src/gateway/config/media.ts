/** Attachments: size limits, retention, what the model accepts, and the transcription model. */
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import type { MediaConfig } from "./types.ts";

const MODEL_INPUT_KINDS = ["text", "image", "file", "audio"] as const;

export function parseMedia(env: Env): MediaConfig {
  const maxRaw = nonEmpty(env, "SWITCHBOARD_MAX_FILE_MB") ?? "20";
  const maxMb = Number(maxRaw);
  if (!Number.isFinite(maxMb) || maxMb <= 0 || maxMb > 2000) {
    fail(
      "SWITCHBOARD_MAX_FILE_MB",
      `must be a number of megabytes above 0, at most 2000 (got "${maxRaw}")`,
      "SWITCHBOARD_MAX_FILE_MB=20",
    );
  }
  const conversationRaw = nonEmpty(env, "SWITCHBOARD_MAX_CONVERSATION_MB") ?? "500";
  const conversationMb = Number(conversationRaw);
  if (!Number.isFinite(conversationMb) || conversationMb <= 0) {
    fail(
      "SWITCHBOARD_MAX_CONVERSATION_MB",
      `must be a number of megabytes above 0 (got "${conversationRaw}")`,
      "SWITCHBOARD_MAX_CONVERSATION_MB=500",
    );
  }
  const audioRaw = nonEmpty(env, "SWITCHBOARD_MAX_AUDIO_MINUTES") ?? "10";
  const audioMinutes = Number(audioRaw);
  if (!Number.isFinite(audioMinutes) || audioMinutes <= 0 || audioMinutes > 600) {
    fail(
      "SWITCHBOARD_MAX_AUDIO_MINUTES",
      `must be a number of minutes above 0, at most 600 (got "${audioRaw}")`,
      "SWITCHBOARD_MAX_AUDIO_MINUTES=10",
    );
  }
  const retentionRaw = nonEmpty(env, "SWITCHBOARD_BLOB_RETENTION_DAYS");
  let blobRetentionMs: number | null = null;
  if (retentionRaw !== undefined && retentionRaw !== "off") {
    const days = Number(retentionRaw);
    if (!Number.isFinite(days) || days <= 0) {
      fail(
        "SWITCHBOARD_BLOB_RETENTION_DAYS",
        `must be a number of days above 0, or off (got "${retentionRaw}")`,
        "SWITCHBOARD_BLOB_RETENTION_DAYS=30",
      );
    }
    blobRetentionMs = Math.round(days * 24 * 60 * 60 * 1000);
  }
  const exportTtlRaw = nonEmpty(env, "SWITCHBOARD_EXPORT_TTL_HOURS") ?? "24";
  const exportTtlHours = Number(exportTtlRaw);
  if (!Number.isFinite(exportTtlHours) || exportTtlHours <= 0 || exportTtlHours > 24 * 365) {
    fail(
      "SWITCHBOARD_EXPORT_TTL_HOURS",
      `must be a number of hours above 0, at most 8760 (got "${exportTtlRaw}")`,
      "SWITCHBOARD_EXPORT_TTL_HOURS=24",
    );
  }
  const inputsRaw = nonEmpty(env, "SWITCHBOARD_MODEL_INPUTS");
  let modelInputs: MediaConfig["modelInputs"] = null;
  if (inputsRaw !== undefined) {
    const kinds = inputsRaw
      .split(",")
      .map((k) => k.trim())
      .filter((k) => k !== "");
    const unknown = kinds.filter((k) => !(MODEL_INPUT_KINDS as readonly string[]).includes(k));
    if (unknown.length > 0) {
      fail(
        "SWITCHBOARD_MODEL_INPUTS",
        `lists ${unknown.map((k) => `"${k}"`).join(", ")}; use a comma list of ${MODEL_INPUT_KINDS.join(", ")}`,
        "SWITCHBOARD_MODEL_INPUTS=text,image",
      );
    }
    modelInputs = new Set(kinds.filter((k): k is "image" | "file" | "audio" => k !== "text"));
  }
  const transcriptionModel = nonEmpty(env, "SWITCHBOARD_TRANSCRIPTION_MODEL") ?? null;
  if (transcriptionModel !== null && !transcriptionModel.startsWith("openai-compatible:")) {
    fail(
      "SWITCHBOARD_TRANSCRIPTION_MODEL",
      `must name an openai-compatible model, served at OPENAI_COMPATIBLE_BASE_URL (got "${transcriptionModel}")`,
      "SWITCHBOARD_TRANSCRIPTION_MODEL=openai-compatible:whisper-1",
    );
  }
  return {
    maxFileBytes: Math.round(maxMb * 1024 * 1024),
    maxConversationBytes: Math.round(conversationMb * 1024 * 1024),
    maxAudioSeconds: Math.round(audioMinutes * 60),
    blobRetentionMs,
    exportTtlMs: Math.round(exportTtlHours * 60 * 60 * 1000),
    modelInputs,
    transcriptionModel,
  };
}
