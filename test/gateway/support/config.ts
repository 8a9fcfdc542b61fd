import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FileConfig, type GatewayConfig, loadConfig } from "../../../src/gateway/config/index.ts";
import { tempDir } from "../../support/runtime.ts";

/** loadConfig over `env`, with `fileJson` (when given) written as the SWITCHBOARD_CONFIG file. */
export function configWith(env: Record<string, string> = {}, fileJson?: unknown): GatewayConfig {
  if (fileJson === undefined) return loadConfig(env);
  const dir = tempDir("switchboard-config-");
  try {
    const path = join(dir.path, "switchboard.json");
    writeFileSync(path, typeof fileJson === "string" ? fileJson : JSON.stringify(fileJson));
    return loadConfig({ ...env, SWITCHBOARD_CONFIG: path });
  } finally {
    dir.cleanup();
  }
}

/** The validated per-surface file config for `json` (version 1 is added). */
export function fileConfig(json: Record<string, unknown> = {}): FileConfig {
  return configWith({}, { version: 1, ...json }).file;
}
