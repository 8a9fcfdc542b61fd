/**
 * The agent: its instructions (SWITCHBOARD_INSTRUCTIONS, the config file, or the default) and its
 * directories (SWITCHBOARD_AGENT_DIR, and each surface's `agentDir`).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import type { FileConfig } from "./file.ts";
import type { GatewayConfig } from "./types.ts";

export const DEFAULT_INSTRUCTIONS =
  "You are a helpful assistant reached through a chat app. Answer concisely in Markdown. " +
  "You can schedule reminders and recurring prompts with your schedule tools when the user asks.";

/** The instructions and where they came from; an `instructionsFile` is relative to the config file. */
export function loadInstructions(
  env: Env,
  file: FileConfig,
  baseDir: string,
): Pick<GatewayConfig, "instructions" | "instructionsSource"> {
  let instructions = nonEmpty(env, "SWITCHBOARD_INSTRUCTIONS") ?? file.instructions;
  const instructionsSource = nonEmpty(env, "SWITCHBOARD_INSTRUCTIONS")
    ? "env"
    : file.instructions || file.instructionsFile
      ? "config"
      : "default";
  if (!instructions && file.instructionsFile) {
    const path = resolve(baseDir, file.instructionsFile);
    if (!existsSync(path))
      fail(
        "SWITCHBOARD_CONFIG",
        `names instructionsFile ${path}, which does not exist`,
        '"instructionsFile": "./instructions.md"',
      );
    instructions = readFileSync(path, "utf8");
  }
  return { instructions: instructions ?? DEFAULT_INSTRUCTIONS, instructionsSource };
}

/**
 * SWITCHBOARD_AGENT_DIR, and each surface's and binding's `agentDir` made absolute (relative to the config file).
 * A directory named explicitly must exist; the default ./agent may be absent.
 */
export function parseAgentDirs(env: Env, file: FileConfig, baseDir: string): string {
  const explicit = nonEmpty(env, "SWITCHBOARD_AGENT_DIR");
  const agentDir = resolve(explicit ?? "./agent");
  if (explicit !== undefined && !isDirectory(agentDir))
    fail(
      "SWITCHBOARD_AGENT_DIR",
      `points at ${agentDir}, which is not a directory (create it, or unset the variable to use ./agent when it exists)`,
      "SWITCHBOARD_AGENT_DIR=./agent",
    );
  for (const [key, surface] of Object.entries(file.surfaces)) {
    if (surface.agentDir === undefined) continue;
    const dir = resolve(baseDir, surface.agentDir);
    if (!isDirectory(dir))
      fail(
        "SWITCHBOARD_CONFIG",
        `gives surface ${key} the agentDir ${dir}, which is not a directory`,
        `"surfaces": {"${key}": {"agentDir": "./agents/support"}}`,
      );
    surface.agentDir = dir;
  }
  for (const [index, binding] of file.bindings.entries()) {
    if (binding.agentDir === undefined) continue;
    const dir = resolve(baseDir, binding.agentDir);
    if (!isDirectory(dir))
      fail(
        "SWITCHBOARD_CONFIG",
        `gives bindings.${index} the agentDir ${dir}, which is not a directory`,
        '"bindings": [{"match": {"channel": "telegram"}, "agentDir": "./agents/support"}]',
      );
    binding.agentDir = dir;
  }
  for (const [name, entry] of Object.entries(file.agents)) {
    if (entry.agentDir === undefined) continue;
    const dir = resolve(baseDir, entry.agentDir);
    if (!isDirectory(dir))
      fail(
        "SWITCHBOARD_CONFIG",
        `gives agents.${name} the agentDir ${dir}, which is not a directory`,
        `"agents": {"${name}": {"agentDir": "./agents/${name}"}}`,
      );
    entry.agentDir = dir;
  }
  return agentDir;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Every agent directory the configuration names: the default one, the surfaces' and the bindings' own. */
export function agentDirsOf(config: Pick<GatewayConfig, "agentDir" | "file">): string[] {
  const dirs = new Set([config.agentDir]);
  for (const surface of Object.values(config.file.surfaces)) if (surface.agentDir) dirs.add(surface.agentDir);
  for (const binding of config.file.bindings) if (binding.agentDir) dirs.add(binding.agentDir);
  for (const entry of Object.values(config.file.agents)) if (entry.agentDir) dirs.add(entry.agentDir);
  return [...dirs];
}
