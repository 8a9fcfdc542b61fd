import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeLlmServer } from "../../support/llm/fake-llm-server.ts";

/** Per-surface settings as `SWITCHBOARD_CONFIG` takes them, e.g. `{ "slack:dm": { delivery: "stream" } }`. */
export type SurfaceSettings = Record<string, Record<string, unknown>>;

/**
 * The environment of an end-to-end gateway: a SQLite file in `dir` (or the PostgreSQL database at
 * `databaseUrl`) and, with `surfaces`, a
 * version-1 config holding them (without, the built-in surface defaults apply); the fake LLM as
 * the model; the web channel off. `extra` adds or overrides variables (channel tokens,
 * allowlists, log level).
 */
export function e2eGatewayEnv(options: {
  dir: string;
  llm: FakeLlmServer;
  surfaces?: SurfaceSettings;
  dbFile?: string;
  /** Run on this PostgreSQL database instead of a SQLite file. */
  databaseUrl?: string;
  /** Name of the config file, for tests that run gateways with different settings side by side. */
  configFile?: string;
  extra?: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {};
  if (options.surfaces) {
    env.SWITCHBOARD_CONFIG = join(options.dir, options.configFile ?? "switchboard.json");
    writeFileSync(env.SWITCHBOARD_CONFIG, JSON.stringify({ version: 1, surfaces: options.surfaces }));
  }
  return {
    ...env,
    ...(options.databaseUrl === undefined
      ? { SWITCHBOARD_DB: join(options.dir, options.dbFile ?? "gateway.sqlite") }
      : { SWITCHBOARD_DATABASE_URL: options.databaseUrl }),
    SWITCHBOARD_WEB: "off",
    SWITCHBOARD_MODEL: "openai-compatible:test-model",
    OPENAI_COMPATIBLE_BASE_URL: options.llm.openaiBaseUrl,
    ...options.extra,
  };
}
