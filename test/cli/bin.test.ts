/**
 * bin/switchboard, the Node.js wrapper npm links as `switchboard`: finds this package's Bun from
 * its own real path, passes arguments, the exit code and signals through.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/runtime.ts";
import { ROOT } from "./support/cli.ts";

const WRAPPER = join(ROOT, "bin", "switchboard");
const NODE = Bun.which("node");
const TIMEOUT_MS = 15_000;

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir("switchboard-bin-");
});
afterEach(() => dir.cleanup());

/** `node <script> …args` with pipes (so the wrapper runs its non-interactive signal mode). */
function spawnNode(script: string, args: string[], cwd = ROOT) {
  return Bun.spawn([NODE!, script, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
}

async function finish(child: ReturnType<typeof spawnNode>) {
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, signal: child.signalCode, stdout, stderr };
}

/**
 * A package folder whose src/cli/main.ts is `main` and whose node_modules/.bin/bun is the real one,
 * with the wrapper copied to bin/ — to watch what the wrapper does without the real CLI.
 */
function fakePackage(main: string): string {
  const root = join(dir.path, "pkg");
  mkdirSync(join(root, "bin"), { recursive: true });
  mkdirSync(join(root, "src", "cli"), { recursive: true });
  mkdirSync(join(root, "node_modules", ".bin"), { recursive: true });
  copyFileSync(WRAPPER, join(root, "bin", "switchboard"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(root, "src", "cli", "main.ts"), main);
  symlinkSync(process.execPath, join(root, "node_modules", ".bin", "bun"));
  return root;
}

/** Prints each signal it gets; exits with 40 + the count on SIGTERM; SIGHUP kills it (default action). */
const SIGNAL_PROBE = `
let count = 0;
process.on("SIGINT", () => { count += 1; console.log("SIGINT " + count); });
process.on("SIGTERM", () => { count += 1; console.log("SIGTERM " + count); setTimeout(() => process.exit(40 + count), 200); });
setInterval(() => {}, 1000);
console.log("ready " + JSON.stringify(process.argv.slice(2)));
`;

/** Collects a stream as it arrives; `until` resolves once the text so far contains `text`. */
function collect(stream: ReadableStream<Uint8Array>) {
  let text = "";
  let wake = () => {};
  const ended = (async () => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value);
      wake();
    }
    wake();
  })();
  return {
    get text() {
      return text;
    },
    ended,
    async until(wanted: string): Promise<string> {
      while (!text.includes(wanted)) {
        const changed = new Promise<void>((resolve) => {
          wake = resolve;
        });
        if (
          (await Promise.race([changed.then(() => false), ended.then(() => true)])) &&
          !text.includes(wanted)
        ) {
          throw new Error(`output ended before '${wanted}'; saw: ${text}`);
        }
      }
      return text;
    },
  };
}

describe.skipIf(NODE === null)("bin/switchboard", () => {
  test(
    "runs the CLI with the package's Bun and passes the exit code through",
    async () => {
      const version = await finish(spawnNode(WRAPPER, ["--version"]));
      expect(version).toMatchObject({
        code: 0,
        stdout: expect.stringMatching(/^switchboard \d+\.\d+\.\d+\n$/),
      });
      const missing = await finish(
        spawnNode(WRAPPER, ["outbox", "list", "--db", join(dir.path, "none.sqlite")]),
      );
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain("No database at");
      const usage = await finish(spawnNode(WRAPPER, ["outbox", "lst"]));
      expect(usage.code).toBe(2);
    },
    TIMEOUT_MS,
  );

  test(
    "resolves the package from its real path when started through a symlink (npm's .bin link)",
    async () => {
      const link = join(dir.path, "node_modules", ".bin", "switchboard");
      mkdirSync(join(dir.path, "node_modules", ".bin"), { recursive: true });
      symlinkSync(WRAPPER, link);
      const help = await finish(spawnNode(link, ["outbox", "resolve", "--help"], dir.path));
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("Usage: switchboard outbox resolve ID --delivered|--failed --note N");
    },
    TIMEOUT_MS,
  );

  test(
    "says to run npm install when the package has no Bun",
    async () => {
      mkdirSync(join(dir.path, "bare", "bin"), { recursive: true });
      const copy = join(dir.path, "bare", "bin", "switchboard");
      copyFileSync(WRAPPER, copy);
      writeFileSync(join(dir.path, "bare", "package.json"), JSON.stringify({ type: "module" }));
      const result = await finish(spawnNode(copy, ["--help"]));
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("Run npm install first.");
    },
    TIMEOUT_MS,
  );

  test(
    "forwards SIGINT and SIGTERM exactly once and returns the child's exit code",
    async () => {
      const root = fakePackage(SIGNAL_PROBE);
      const child = spawnNode(join(root, "bin", "switchboard"), ["start", "--flag"]);
      const stdout = collect(child.stdout);
      expect(await stdout.until("ready")).toContain('ready ["start","--flag"]');
      child.kill("SIGINT");
      await stdout.until("SIGINT 1");
      child.kill("SIGTERM");
      const code = await child.exited;
      await stdout.ended;
      expect(stdout.text.trim().split("\n").slice(1)).toEqual(["SIGINT 1", "SIGTERM 2"]);
      expect(code).toBe(42);
    },
    TIMEOUT_MS,
  );

  test(
    "ends with the same signal when the child is killed by one",
    async () => {
      const root = fakePackage(SIGNAL_PROBE);
      const child = spawnNode(join(root, "bin", "switchboard"), []);
      await collect(child.stdout).until("ready");
      child.kill("SIGHUP");
      await child.exited;
      expect(child.signalCode).toBe("SIGHUP");
    },
    TIMEOUT_MS,
  );

  test(
    "npx switchboard --help works from the project folder",
    async () => {
      const npx = Bun.spawn(["npx", "--no-install", "switchboard", "--help"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", npm_config_offline: "true" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, code] = await Promise.all([new Response(npx.stdout).text(), npx.exited]);
      expect(code).toBe(0);
      expect(stdout).toContain("Usage: switchboard <command>");
    },
    TIMEOUT_MS,
  );
});
