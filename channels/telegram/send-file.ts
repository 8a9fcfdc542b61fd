/**
 * Files out: the Bot API method a file goes through, chosen from its sniffed type, and
 * Telegram's upload limits for bots on the public Bot API server.
 */
import { type FileLimits, isPhotoType } from "../types.ts";

const MB = 1024 * 1024;

/** Photos up to 10 MB, other files up to 50 MB; captions up to 1024 characters after entities parsing. */
export const TELEGRAM_FILE_LIMITS: FileLimits = {
  maxFileBytes: 50 * MB,
  maxPhotoBytes: 10 * MB,
  maxCaptionChars: 1024,
};

export type TelegramFileMethod = "sendPhoto" | "sendVoice" | "sendDocument";

/**
 * Photos (JPEG, PNG, WebP) as photos, OGG/Opus audio as a voice note (the only format Telegram
 * plays as one), everything else as a document, shown as a file that is never opened.
 */
export function telegramFileMethod(mimeType: string): TelegramFileMethod {
  if (isPhotoType(mimeType)) return "sendPhoto";
  const base = mimeType.split(";")[0]!.trim();
  if (base === "audio/ogg" || base === "audio/opus") return "sendVoice";
  return "sendDocument";
}

/** grammY writes the name unquoted into the multipart header: keep it to safe characters. */
export function uploadFilename(filename: string): string {
  const safe = filename.replace(/[^\p{L}\p{N}._-]+/gu, "_").slice(0, 200);
  return safe === "" || /^[._]+$/.test(safe) ? "file" : safe;
}
