/** Runs the real CLI (`bun src/cli/main.ts …`) as a child process and collects what it printed. */
import { join } from "node:path";
import { runCli } from "../../../src/cli/run.ts";

export const ROOT = join(import.meta.dir, "..", "..", "..");
const ENTRY = join(ROOT, "src", "cli", "main.ts");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `env` replaces the variables switchboard reads (SWITCHBOARD_*, USER) so the developer's own
 * environment never leaks into a test; PATH and HOME are kept.
 */
export async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = Bun.spawn([process.execPath, ENTRY, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", USER: "tester", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/** The parsed JSON document on stdout; fails with what the CLI said when it is not one. */
export function json<T = unknown>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `stdout is not one JSON document (exit ${result.code}).\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

/** The same command run in this process through runCli: for the many usage cases, without a spawn each. */
export async function cliInProcess(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: { USER: "tester", ...env },
  });
  return { code, stdout, stderr };
}
