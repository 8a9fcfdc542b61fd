/** The database: PostgreSQL from SWITCHBOARD_DATABASE_URL, else a SQLite file (SWITCHBOARD_DB). */
import type { DatabaseConfig } from "../../store/open-backend.ts";
import { type Env, fail, nonEmpty, parseIntegerIn } from "../../util/env.ts";

const POSTGRES_EXAMPLE = "SWITCHBOARD_DATABASE_URL=postgres://switchboard@127.0.0.1:5432/switchboard";

/** SWITCHBOARD_DATABASE_URL selects PostgreSQL; otherwise SWITCHBOARD_DB names the SQLite file. */
export function parseDatabase(env: Env, secrets: string[]): DatabaseConfig {
  const url = nonEmpty(env, "SWITCHBOARD_DATABASE_URL");
  const path = nonEmpty(env, "SWITCHBOARD_DB");
  const standbyRaw = nonEmpty(env, "SWITCHBOARD_STANDBY") ?? "off";
  if (standbyRaw !== "on" && standbyRaw !== "off")
    fail("SWITCHBOARD_STANDBY", `must be on or off (got "${standbyRaw}")`, "SWITCHBOARD_STANDBY=on");
  if (url === undefined) {
    if (standbyRaw === "on")
      fail(
        "SWITCHBOARD_STANDBY",
        "needs SWITCHBOARD_DATABASE_URL: gateways share a PostgreSQL database, never a SQLite file, so a standby has nothing to wait for",
        POSTGRES_EXAMPLE,
      );
    const blobDir = nonEmpty(env, "SWITCHBOARD_BLOB_DIR");
    // Unset leaves the store's default (SQLITE_CACHE_BYTES_DEFAULT, 16 MiB); 16 is the example.
    const cacheMb = nonEmpty(env, "SWITCHBOARD_SQLITE_CACHE_MB")
      ? parseIntegerIn(env, "SWITCHBOARD_SQLITE_CACHE_MB", 16, {
          min: 1,
          max: 4096,
          what: "a whole number of MiB",
        })
      : undefined;
    return {
      engine: "sqlite",
      path: path ?? "./data/switchboard.sqlite",
      ...(blobDir ? { blobDir } : {}),
      ...(cacheMb === undefined ? {} : { cacheBytes: cacheMb * 1024 * 1024 }),
    };
  }
  if (path !== undefined) {
    fail(
      "SWITCHBOARD_DATABASE_URL",
      "and SWITCHBOARD_DB are both set; keep SWITCHBOARD_DATABASE_URL for PostgreSQL or SWITCHBOARD_DB for a SQLite file, not both",
      POSTGRES_EXAMPLE,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail("SWITCHBOARD_DATABASE_URL", "is not a URL", POSTGRES_EXAMPLE);
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    fail(
      "SWITCHBOARD_DATABASE_URL",
      `must be a postgres:// or postgresql:// URL (got a ${parsed.protocol.replace(/:$/, "")} URL); for SQLite set SWITCHBOARD_DB instead`,
      POSTGRES_EXAMPLE,
    );
  }
  if (parsed.password) secrets.push(decodeURIComponent(parsed.password), parsed.password);
  return { engine: "postgres", url, standby: standbyRaw === "on" };
}
