/**
 * Invalid bindings stop `switchboard start` (a real process) with exit 78 and a message naming the
 * binding's index and key: an unknown account, an unknown key, a binding an earlier one shadows,
 * and an agent directory that does not exist.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/runtime.ts";
import { runCli } from "./support/cli.ts";

const dir = tempDir("switchboard-e2e-bindings-config-");
afterAll(() => dir.cleanup());

const cases: Array<[string, unknown[], RegExp]> = [
  [
    "an unknown account",
    [
      { match: { channel: "telegram", chat: "42" }, inputPolicy: "queue" },
      { match: { channel: "telegram", account: "support" }, model: "offline" },
    ],
    /SWITCHBOARD_CONFIG has bindings that cannot work: bindings\.1\.match\.account: "support" is not an account of telegram; accounts: default/,
  ],
  [
    "an unknown match key",
    [{ match: { channel: "discord", guid: "123" }, inputPolicy: "queue" }],
    /bindings\.0\.match: unknown key "guid" \(did you mean "guild"\?\)/,
  ],
  [
    "an unknown setting",
    [{ match: { channel: "slack" }, instruction: "Be brief." }],
    /bindings\.0: unknown key "instruction" \(did you mean "instructions"\?\)/,
  ],
  [
    "a binding an earlier one always matches first",
    [
      { match: { channel: "telegram" }, inputPolicy: "queue" },
      { match: { channel: "telegram", chat: "42" }, inputPolicy: "supersede" },
    ],
    /bindings\.1\.match: never matches: bindings\.0 matches every conversation this one does and comes first/,
  ],
  [
    "a Slack-only key without the Slack channel",
    [{ match: { team: "T0ACME" }, instructions: "Sales." }],
    /bindings\.0\.match\.team: "team" exists only on slack/,
  ],
  [
    "an agent directory that does not exist",
    [{ match: { channel: "telegram" }, agentDir: "agents/missing" }],
    /gives bindings\.0 the agentDir .*agents\/missing, which is not a directory/,
  ],
];

describe("invalid bindings stop the start with exit 78", () => {
  for (const [name, bindings, message] of cases) {
    test(name, async () => {
      const configFile = join(dir.path, `${name.replaceAll(" ", "-")}.json`);
      writeFileSync(configFile, JSON.stringify({ version: 1, bindings }));
      const result = await runCli(["start"], {
        SWITCHBOARD_CONFIG: configFile,
        SWITCHBOARD_DB: join(dir.path, "never-opened.sqlite"),
        SWITCHBOARD_HTTP_PORT: "0",
      });
      expect(result.exitCode).toBe(78);
      expect(result.stderr).toMatch(/^switchboard: configuration error: SWITCHBOARD_CONFIG/m);
      expect(result.stderr).toMatch(message);
    }, 20_000);
  }
});
