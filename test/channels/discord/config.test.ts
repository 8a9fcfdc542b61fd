import { describe, expect, test } from "bun:test";
import { parseDiscordConfig } from "../../../channels/discord/index.ts";
import { discordModule } from "../../../channels/discord/module.ts";
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
      interactionDeferMs: 2000,
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

describe("DISCORD_COMMANDS_GUILD", () => {
  const file = { section: {}, allowBots: false };
  test("names the server slash commands are registered in; a non-id is refused naming the variable", () => {
    expect(
      discordModule.fromEnv(
        { DISCORD_BOT_TOKEN: "abc.def", DISCORD_COMMANDS_GUILD: "123456789012345678" },
        file,
      ),
    ).toMatchObject({ commandsGuildId: "123456789012345678" });
    expect(discordModule.fromEnv({ DISCORD_BOT_TOKEN: "abc.def" }, file)?.commandsGuildId).toBeUndefined();
    let refusal: unknown;
    try {
      discordModule.fromEnv({ DISCORD_BOT_TOKEN: "abc.def", DISCORD_COMMANDS_GUILD: "my-server" }, file);
    } catch (error) {
      refusal = error;
    }
    expect(isSwitchboardError(refusal, "config_invalid")).toBe(true);
    expect((refusal as Error).message).toContain("DISCORD_COMMANDS_GUILD");
  });
});
