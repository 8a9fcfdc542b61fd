import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..", "..");
const CLI = join(ROOT, "src", "cli", "main.ts");

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `bun src/cli/main.ts ...args` as an operator would, with only `env` (plus PATH/HOME) set. */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = Bun.spawn([process.execPath, CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stdout, stderr };
}

/** Runs a `--json` command and parses its stdout; fails with the CLI's stderr when it exits non-zero. */
export async function runCliJson<T>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await runCli([...args, "--json"], env);
  if (result.exitCode !== 0) {
    throw new Error(`switchboard ${args.join(" ")} exited ${result.exitCode}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as T;
}
