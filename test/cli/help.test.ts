import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EXIT } from "../../src/cli/exit-codes.ts";
import { COMMANDS, GROUPS, runCli, VERSION } from "../../src/cli/run.ts";
import { closest } from "../../src/util/suggest.ts";
import { cli, ROOT } from "./support/cli.ts";

/** runCli in-process with captured output; no database or network is touched by --help. */
async function run(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: {},
  });
  return { code, stdout, stderr };
}

describe("--help", () => {
  test.each(COMMANDS.map((c) => [c.path.join(" "), c] as const))(
    "switchboard %s --help exits 0 and documents every flag and argument",
    async (_name, command) => {
      const { code, stdout, stderr } = await run([...command.path, "--help"]);
      expect(code).toBe(EXIT.ok);
      expect(stderr).toBe("");
      expect(stdout).toStartWith(`Usage: switchboard ${command.synopsis}\n`);
      for (const [name, option] of Object.entries(command.options)) {
        expect(stdout).toContain(option.type === "string" ? `--${name} ${option.valueName}` : `--${name}`);
        expect(stdout).toContain(option.description);
      }
      for (const arg of command.args) expect(stdout).toContain(arg.description);
      expect(stdout).toContain("Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused");
      // -h works too, anywhere after the command.
      expect((await run([...command.path, "x", "-h"])).stdout).toBe(stdout);
    },
  );

  test.each(GROUPS.map((g) => [g.name, g] as const))(
    "switchboard %s --help lists its subcommands",
    async (name) => {
      const { code, stdout } = await run([name, "--help"]);
      expect(code).toBe(EXIT.ok);
      for (const command of COMMANDS.filter((c) => c.path[0] === name)) {
        expect(stdout).toContain(command.synopsis);
        expect(stdout).toContain(command.summary);
      }
    },
  );

  test("switchboard --help lists every command and the exit codes; --version prints the version", async () => {
    const { code, stdout } = await run(["--help"]);
    expect(code).toBe(EXIT.ok);
    for (const command of COMMANDS)
      expect(stdout).toContain(command.path.length === 1 ? command.path[0]! : command.synopsis);
    expect(stdout).toContain("Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused");
    expect(await run(["--version"])).toEqual({
      code: EXIT.ok,
      stdout: `switchboard ${VERSION}\n`,
      stderr: "",
    });
  });

  test("the real process prints the same help and exits 0", async () => {
    for (const argv of [["--help"], ["outbox", "--help"], ["outbox", "resolve", "--help"]]) {
      const spawned = await cli(argv);
      expect(spawned.code).toBe(0);
      expect(spawned.stdout).toBe((await run(argv)).stdout);
      expect(spawned.stdout).toContain(argv.length === 3 ? "--delivered" : "outbox");
    }
  }, 10_000);
});

describe("docs/cli.md", () => {
  const doc = readFileSync(join(ROOT, "docs", "cli.md"), "utf8").replaceAll("\\|", "|");

  test("documents every command's synopsis", () => {
    for (const command of COMMANDS) expect(doc).toContain(`\`${command.synopsis}\``);
  });

  test("documents every exit code with the meaning the code uses", () => {
    const rows = [...doc.matchAll(/^\| (\d)\s*\| (\w+)/gm)].map((m) => [Number(m[1]), m[2]!.toLowerCase()]);
    expect(rows).toEqual([
      [EXIT.ok, "success"],
      [EXIT.error, "error"],
      [EXIT.usage, "usage"],
      [EXIT.notFound, "not"],
      [EXIT.refused, "refused"],
    ]);
  });
});

describe("suggestions", () => {
  test("closest finds typos and prefixes, and nothing for unrelated words", () => {
    expect(closest("outbx", ["outbox", "runs", "db"])).toBe("outbox");
    expect(closest("--stat", ["--state", "--limit"])).toBe("--state");
    expect(closest("shcedules", ["schedules", "start"])).toBe("schedules");
    expect(closest("conv", ["conversations", "chat"])).toBe("conversations");
    expect(closest("zzzzzz", ["outbox", "runs"])).toBeNull();
  });
});
