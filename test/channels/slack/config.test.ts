import { describe, expect, test } from "bun:test";
import { parseSlackConfig } from "../../../channels/slack/config.ts";
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
});
