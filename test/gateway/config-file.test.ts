import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/gateway/config/index.ts";
import { tempDir } from "../support/runtime.ts";

const dir = tempDir("switchboard-config-file-");

/** The configuration error `loadConfig` throws for a config file holding `text`, or null. */
function problemWith(text: string, env: Record<string, string> = {}): string | null {
  const file = join(dir.path, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, text);
  try {
    loadConfig({ SWITCHBOARD_CONFIG: file, SWITCHBOARD_DB: join(dir.path, "x.sqlite"), ...env });
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe("the SWITCHBOARD_CONFIG file", () => {
  test("a JSON syntax error names the file, the line and the column", () => {
    const problem = problemWith('{\n  "version": 1,\n  "surfaces": {,}\n}');
    expect(problem).toContain("SWITCHBOARD_CONFIG");
    expect(problem).toContain(dir.path);
    expect(problem).toMatch(/at line 3, column 16/);
  });

  test("a comment is named as such", () => {
    expect(problemWith('{ "version": 1 // one\n}')).toMatch(
      /a comment \(JSON has none\) at line 1, column 16/,
    );
  });

  test("a UTF-8 byte order mark is accepted", () => {
    expect(problemWith('\uFEFF{"version": 1, "allowBots": true}')).toBeNull();
  });

  test("version defaults to 1 when absent; another version is refused", () => {
    expect(problemWith('{"surfaces": {"telegram:dm": {"inputPolicy": "queue"}}}')).toBeNull();
    expect(problemWith('{"version": 2}')).toContain("version: must be 1 (got 2)");
  });

  test("a mistyped policy gets the closest valid one and the list", () => {
    const problem = problemWith('{"surfaces": {"telegram:dm": {"inputPolicy": "supersed"}}}');
    expect(problem).toContain(
      'surfaces.telegram:dm.inputPolicy: "supersed" is not one of queue, supersede, interrupt, inject (did you mean "supersede"?)',
    );
  });

  test("a mistyped key gets the closest valid one and the keys that exist there", () => {
    expect(problemWith('{"surfaces": {"slack:dm": {"inputPolicey": "queue"}}}')).toContain(
      'surfaces.slack:dm: unknown key "inputPolicey" (did you mean "inputPolicy"?); valid keys: inputPolicy, delivery, requireMention, nativeStreaming, instructions',
    );
    expect(problemWith('{"surfacs": {}}')).toContain(
      '(top level): unknown key "surfacs" (did you mean "surfaces"?)',
    );
  });

  test("a bad surface key names the valid ones and the closest", () => {
    const problem = problemWith('{"surfaces": {"telegam:dm": {"inputPolicy": "queue"}}}');
    expect(problem).toContain('surfaces: "telegam:dm" is not a valid key (did you mean "telegram:dm"?)');
    expect(problem).toContain(
      "channel telegram, discord, slack, whatsapp, matrix, web, api or *, and surface dm, group, thread or *",
    );
  });
});

describe("allow lists", () => {
  test("TELEGRAM_ALLOWED_USERS refuses a user name: Telegram ids are numbers", () => {
    const env = {
      TELEGRAM_BOT_TOKEN: "123:abcdefghijklmnopqrstuvwxyz",
      SWITCHBOARD_DB: join(dir.path, "y.sqlite"),
    };
    expect(() => loadConfig({ ...env, TELEGRAM_ALLOWED_USERS: "alice" })).toThrow(
      'TELEGRAM_ALLOWED_USERS has "alice", which is not a user id (Telegram user ids are numbers',
    );
    const config = loadConfig({ ...env, TELEGRAM_ALLOWED_USERS: "12345, 67890" });
    expect(config.allowLists.telegram).toEqual({ kind: "ids", ids: new Set(["12345", "67890"]) });
  });
});
