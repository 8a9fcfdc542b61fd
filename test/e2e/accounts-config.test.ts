/**
 * Invalid `accounts` stop `switchboard start` (a real process) with exit 78, naming the key, and
 * never printing a secret's value: the token of an account that is not a `${VAR}`, and a
 * variable holding something that is not a bot token.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/runtime.ts";
import { runCli } from "./support/cli.ts";

const dir = tempDir("switchboard-e2e-accounts-config-");
afterAll(() => dir.cleanup());

const NOT_A_TOKEN = "this-is-a-secret-but-no-token";

const cases: Array<[string, Record<string, unknown>, RegExp]> = [
  [
    "a token written into the file",
    { support: { token: "222222222:AASupportTokenForTests_abcdefghijkl" } },
    /accounts\.telegram\.support\.token holds a secret, so it must be a \$\{VAR\} reference/,
  ],
  [
    "a variable that holds no bot token",
    { support: { token: "${TG_SUPPORT}" } },
    /accounts\.telegram\.support\.token: must be the bot token from @BotFather/,
  ],
];

describe("invalid accounts stop the start with exit 78", () => {
  for (const [name, telegram, message] of cases) {
    test(name, async () => {
      const configFile = join(dir.path, `${name.replaceAll(" ", "-")}.json`);
      writeFileSync(configFile, JSON.stringify({ version: 1, accounts: { telegram } }));
      const result = await runCli(["start"], {
        SWITCHBOARD_CONFIG: configFile,
        SWITCHBOARD_DB: join(dir.path, "never-opened.sqlite"),
        SWITCHBOARD_HTTP_PORT: "0",
        TG_SUPPORT: NOT_A_TOKEN,
      });
      expect(result.exitCode).toBe(78);
      expect(result.stderr).toMatch(/^switchboard: configuration error: SWITCHBOARD_CONFIG/m);
      expect(result.stderr).toMatch(message);
      expect(result.stderr + result.stdout).not.toContain(NOT_A_TOKEN);
      expect(result.stderr + result.stdout).not.toContain("AASupportTokenForTests");
    }, 20_000);
  }
});
