import { describe, expect, test } from "bun:test";
import { parseDiscordConfig } from "../../../channels/discord/index.ts";
import { isSwitchboardError } from "../../../src/errors.ts";

function configError(input: unknown) {
  try {
    parseDiscordConfig(input);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) return error;
    throw error;
  }
  throw new Error("expected config_invalid");
}

describe("parseDiscordConfig", () => {
  test("fills defaults", () => {
    expect(parseDiscordConfig({ token: "abc.def" })).toEqual({
      token: "abc.def",
      requestTimeoutMs: 15_000,
      readyTimeoutMs: 30_000,
      groupSessions: "shared",
      allowBots: false,
    });
  });

  test("names each bad field and the fix, never the token", () => {
    const error = configError({
      token: "Bot secret-token-value",
      apiUrl: "http://127.0.0.1:1/api/",
      requestTimeoutMs: -1,
      groupSessions: "everyone",
    });
    expect(error.message).toContain('Remove the "Bot " prefix');
    expect(error.message).toContain("trailing '/'");
    expect(error.details?.fields).toEqual(["token", "apiUrl", "requestTimeoutMs", "groupSessions"]);
    expect(error.message).not.toContain("secret-token-value");
  });

  test("a missing token says what to set", () => {
    expect(configError({}).message).toContain("Set the Discord bot token");
    expect(configError({ token: "" }).message).toContain("it is empty");
  });
});
