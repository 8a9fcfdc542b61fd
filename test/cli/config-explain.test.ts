/** `switchboard config explain`: the settings a conversation gets, and what set each. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExplainedConversation } from "../../src/gateway/config/explain.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, cliInProcess, json } from "./support/cli.ts";

const dir = tempDir("switchboard-cli-explain-");
afterAll(() => dir.cleanup());
mkdirSync(join(dir.path, "agents", "support"), { recursive: true });
const configFile = join(dir.path, "switchboard.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { inputPolicy: "queue" } },
    models: { smart: "openrouter:anthropic/claude-sonnet-4" },
    bindings: [
      {
        match: { channel: "telegram", account: "default", chat: "42" },
        agentDir: "agents/support",
        model: "openrouter:openai/gpt-4o-mini",
        tools: ["web", "state"],
      },
      {
        match: { channel: "slack", team: "T0ACME", chat: "C0SALES" },
        instructions: "You help the sales team.",
      },
      { match: { channel: "discord", guild: "123", role: "456" }, inputPolicy: "supersede" },
    ],
  }),
);
const env = { SWITCHBOARD_CONFIG: configFile, SWITCHBOARD_AGENT_DIR: dir.path };

/** The SET BY column of the row for `setting`. */
const setBy = (stdout: string, setting: string) =>
  stdout
    .split("\n")
    .find((line) => line.startsWith(`${setting} `))
    ?.trim()
    .split(/\s{2,}/)
    .at(-1);

describe("config explain", () => {
  test("prints the matched binding and, per setting, its value and what set it (a real process)", async () => {
    const result = await cli(
      ["config", "explain", "--channel", "telegram", "--chat", "42", "--user", "7"],
      env,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("conversation: telegram, account default, dm, chat 42, user 7");
    expect(result.stdout).toContain(
      "binding:      bindings.0 (match channel=telegram account=default chat=42)",
    );
    expect(result.stdout).toMatch(/^SETTING\s+VALUE\s+SET BY$/m);
    expect(result.stdout).toMatch(/^inputPolicy\s+queue\s+surfaces\.telegram:dm$/m);
    expect(result.stdout).toMatch(/^delivery\s+stream\s+default$/m);
    expect(result.stdout).toMatch(/^tools\s+web, state\s+bindings\.0$/m);
    expect(result.stdout).toContain(join(dir.path, "agents", "support"));
    expect(setBy(result.stdout, "agentDir")).toBe("bindings.0");
    expect(result.stdout).toMatch(/^model\s+openrouter:openai\/gpt-4o-mini\s+bindings\.0$/m);
    expect(result.stdout).toMatch(/^models\s+smart=openrouter:anthropic\/claude-sonnet-4\s+models$/m);
  }, 20_000);

  test("another chat: no binding matches, and the defaults say what absent means", async () => {
    const result = await cliInProcess(["config", "explain", "--channel", "telegram", "--chat", "43"], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("binding:      none matches: the surfaces and defaults decide");
    expect(result.stdout).toMatch(/^tools\s+all tool sets\s+default$/m);
    expect(result.stdout).toMatch(new RegExp(`^agentDir\\s+${dir.path}\\s+default$`, "m"));
    expect(result.stdout).toMatch(/^model\s+the gateway's model \(SWITCHBOARD_MODEL\)\s+default$/m);
  });

  test("--team, --guild, --role and --surface take part in matching; --json gives the explanation", async () => {
    const slack = json<ExplainedConversation>(
      await cliInProcess(
        [
          "config",
          "explain",
          "--channel",
          "slack",
          "--team",
          "T0ACME",
          "--chat",
          "C0SALES",
          "--surface",
          "thread",
          "--json",
        ],
        env,
      ),
    );
    expect(slack.binding).toBe(1);
    expect(slack.settings.instructions).toBe("You help the sales team.");
    expect(slack.sources.instructions).toBe("bindings.1");
    expect(slack.settings.inputPolicy).toBe("queue");
    expect(slack.sources.inputPolicy).toBe("default");

    const discord = json<ExplainedConversation>(
      await cliInProcess(
        [
          "config",
          "explain",
          "--channel",
          "discord",
          "--guild",
          "123",
          "--role",
          "9, 456",
          "--surface",
          "group",
          "--json",
        ],
        env,
      ),
    );
    expect(discord.facts.roles).toEqual(["9", "456"]);
    expect(discord.binding).toBe(2);
    expect(discord.settings.inputPolicy).toBe("supersede");
    const otherRole = json<ExplainedConversation>(
      await cliInProcess(
        ["config", "explain", "--channel", "discord", "--guild", "123", "--role", "9", "--json"],
        env,
      ),
    );
    expect(otherRole.binding).toBeNull();
  });

  test("an account that is not configured is matched as asked, with a note", async () => {
    const result = await cliInProcess(
      ["config", "explain", "--channel", "telegram", "--account", "support", "--chat", "42"],
      env,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('note:         telegram has no account "support" (accounts: default)');
    expect(result.stdout).toContain("binding:      none matches");
  });

  test("usage errors exit 2: no --channel, an unknown channel or surface; an invalid file exits 2 naming the binding", async () => {
    const missing = await cliInProcess(["config", "explain", "--chat", "42"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("needs --channel");
    const unknown = await cliInProcess(["config", "explain", "--channel", "telegrma"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Did you mean");
    const surface = await cliInProcess(
      ["config", "explain", "--channel", "telegram", "--surface", "channel"],
      env,
    );
    expect(surface.code).toBe(2);

    const badFile = join(dir.path, "bad.json");
    writeFileSync(
      badFile,
      JSON.stringify({
        version: 1,
        bindings: [{ match: {} }, { match: { channel: "telegram" }, delivery: "terminal" }],
      }),
    );
    const invalid = await cliInProcess(["config", "explain", "--channel", "telegram"], {
      ...env,
      SWITCHBOARD_CONFIG: badFile,
    });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(
      "bindings.1.match: never matches: bindings.0 matches every conversation",
    );
  });

  test("shows a binding's apps, checked against SWITCHBOARD_APP_TOKENS when it is set", async () => {
    const appsFile = join(dir.path, "apps.json");
    writeFileSync(
      appsFile,
      JSON.stringify({
        version: 1,
        bindings: [{ match: { channel: "telegram", chat: "42" }, apps: ["crm"] }],
      }),
    );
    const explain = (chat: string, apps: string) =>
      cliInProcess(["config", "explain", "--channel", "telegram", "--chat", chat], {
        ...env,
        SWITCHBOARD_CONFIG: appsFile,
        SWITCHBOARD_APP_TOKENS: apps,
      });
    const bound = await explain("42", "crm=crm-token-0123456789abc");
    expect(bound.code).toBe(0);
    expect(bound.stdout).toMatch(/^apps\s+crm\s+bindings\.0$/m);
    expect((await explain("43", "crm=crm-token-0123456789abc")).stdout).toMatch(/^apps\s+none\s+default$/m);
    const unknown = await explain("42", "alerts=alerts-token-0123456789");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'bindings.0.apps: "crm" is not an app of SWITCHBOARD_APP_TOKENS; apps: alerts',
    );
  });
});
