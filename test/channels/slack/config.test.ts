import { describe, expect, test } from "bun:test";
import { DEFAULT_ASSISTANT_PROMPTS, parseSlackConfig } from "../../../channels/slack/config.ts";
import { slackModule } from "../../../channels/slack/module.ts";
import { isSwitchboardError } from "../../../src/errors.ts";

function configError(input: unknown): string {
  try {
    parseSlackConfig(input);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error.message;
    throw error;
  }
  throw new Error("expected config_invalid");
}

describe("parseSlackConfig", () => {
  test("socket mode with defaults", () => {
    expect(parseSlackConfig({ mode: "socket", botToken: "xoxb-1-a", appToken: "xapp-1-b" })).toEqual({
      mode: "socket",
      botToken: "xoxb-1-a",
      appToken: "xapp-1-b",
      apiUrl: "https://slack.com/api/",
      requestTimeoutMs: 10_000,
      allowOtherBots: false,
      assistantPrompts: [...DEFAULT_ASSISTANT_PROMPTS],
    });
  });

  test("http mode with defaults; apiUrl gets its trailing slash", () => {
    expect(
      parseSlackConfig({
        mode: "http",
        botToken: "xoxb-1-a",
        signingSecret: "s3cret",
        apiUrl: "http://127.0.0.1:9/api",
      }),
    ).toMatchObject({ mode: "http", eventsPath: "/slack/events", apiUrl: "http://127.0.0.1:9/api/" });
  });

  test("names the field and the fix, never the token", () => {
    const swapped = configError({ mode: "socket", botToken: "xapp-1-secretvalue", appToken: "xapp-1-b" });
    expect(swapped).toContain("slack.botToken");
    expect(swapped).toContain("xoxb-");
    expect(swapped).not.toContain("secretvalue");
    expect(configError({ mode: "http", botToken: "xoxb-1-a" })).toContain("slack.signingSecret");
    expect(configError({ mode: "socket", botToken: "xoxb-1-a" })).toContain("slack.appToken");
    expect(configError({ botToken: "xoxb-1-a" })).toContain('"socket"');
    expect(
      configError({ mode: "http", botToken: "xoxb-1-a", signingSecret: "s", requestTimeoutMs: -1 }),
    ).toContain("slack.requestTimeoutMs");
  });

  test("assistant prompts: strings stand for title and message, [] offers none, more than 4 is refused", () => {
    const base = { mode: "socket", botToken: "xoxb-1-a", appToken: "xapp-1-b" } as const;
    expect(
      parseSlackConfig({ ...base, assistantPrompts: ["Hi", { title: "Sum", message: "Summarise this" }] })
        .assistantPrompts,
    ).toEqual([
      { title: "Hi", message: "Hi" },
      { title: "Sum", message: "Summarise this" },
    ]);
    expect(parseSlackConfig({ ...base, assistantPrompts: [] }).assistantPrompts).toEqual([]);
    expect(configError({ ...base, assistantPrompts: ["a", "b", "c", "d", "e"] })).toContain("at most 4");
    expect(configError({ ...base, assistantPrompts: [{ title: "t", message: "" }] })).toContain(
      "slack.assistantPrompts",
    );
  });
});

describe("SLACK_ASSISTANT_PROMPTS", () => {
  const env = { SLACK_BOT_TOKEN: "xoxb-1-a", SLACK_APP_TOKEN: "xapp-1-b" };
  const file = { section: {}, allowBots: false };

  test("read as JSON", () => {
    const config = slackModule.fromEnv({ ...env, SLACK_ASSISTANT_PROMPTS: '["Plan my day"]' }, file);
    expect(config?.assistantPrompts).toEqual([{ title: "Plan my day", message: "Plan my day" }]);
    expect(slackModule.fromEnv(env, file)?.assistantPrompts).toEqual([...DEFAULT_ASSISTANT_PROMPTS]);
  });

  test("bad JSON or a bad shape names the variable and shows an example", () => {
    for (const value of ["Plan my day", '{"title":"x"}', '["a","b","c","d","e"]']) {
      let message = "";
      try {
        slackModule.fromEnv({ ...env, SLACK_ASSISTANT_PROMPTS: value }, file);
      } catch (error) {
        if (isSwitchboardError(error, "config_invalid")) message = error.message;
        else throw error;
      }
      expect(message).toContain("SLACK_ASSISTANT_PROMPTS");
      expect(message).toContain("Example:");
    }
  });
});
