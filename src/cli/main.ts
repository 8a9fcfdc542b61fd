/**
 * `switchboard` entry point (bin/switchboard, `npm start`). Output and exit code come from
 * runCli; `start` and `chat` keep the process alive until their own shutdown.
 */
import { runCli } from "./run.ts";

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
