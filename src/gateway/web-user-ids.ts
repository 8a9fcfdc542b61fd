/**
 * The key web chat user ids are derived under (channels/web/user-id.ts), and the one-time rewrite
 * of rows stored before they were (src/store/web-session-ids.ts). Run by the active gateway at
 * start, before recovery and the channels: no run, send or page sees a half-migrated database.
 */
import { randomBytes } from "node:crypto";
import { WEB_USER_ID_SECRET, webUserIds } from "../../channels/web/user-id.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { Logger } from "../util/log.ts";

/** Loads (first: creates and keeps) the key, rewrites old rows once; resolves with the key. */
export async function prepareWebUserIds(
  stores: StoreBackend,
  nowMs: number,
  logger: Logger,
): Promise<string> {
  const key = await stores.runtime.loadOrCreateSecret(
    WEB_USER_ID_SECRET,
    randomBytes(32).toString("base64url"),
    nowMs,
  );
  const migrated = await stores.migrateWebSessionIds(webUserIds(key), nowMs);
  // Counts only: the ids it rewrote are what must never be logged.
  if (migrated !== null && migrated.sessions > 0)
    logger.info("web.session_ids_migrated", {
      sessions: migrated.sessions,
      rows: migrated.rows,
      tables: migrated.tables,
      hint: "stored web chat session ids were replaced by the user ids derived from them; the browsers keep their conversations",
    });
  return key;
}
