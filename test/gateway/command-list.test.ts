/**
 * The one command list: valid on every platform as written, and what the help text, the text
 * parser and the menus are made of.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { discordCommands } from "../../channels/discord/commands.ts";
import { slackCommandName } from "../../channels/slack/slash.ts";
import { telegramMenu } from "../../channels/telegram/commands.ts";
import { COMMAND_NAMES, HELP_TEXT, MENU_COMMANDS } from "../../src/gateway/command-list.ts";

describe("the command list", () => {
  test("fits every platform's menu without anything dropped", () => {
    expect(telegramMenu(MENU_COMMANDS).dropped).toEqual([]);
    expect(discordCommands(MENU_COMMANDS).dropped).toEqual([]);
    for (const command of MENU_COMMANDS) {
      expect(command.name).toMatch(/^[a-z0-9_]{1,32}$/);
      expect(command.description.length).toBeLessThanOrEqual(100);
      for (const text of Object.values(command.descriptions ?? {}))
        expect(text.length).toBeLessThanOrEqual(100);
      // Discord wants required options before optional ones.
      const required = command.arguments.map((a) => a.required);
      expect(required).toEqual([...required].sort((a, b) => Number(b) - Number(a)));
    }
  });

  test("the menus hold every command but /start, which only the help text and parser know", () => {
    expect(MENU_COMMANDS.map((c) => c.name).sort()).toEqual(
      COMMAND_NAMES.filter((n) => n !== "start").sort(),
    );
    expect(COMMAND_NAMES).toContain("start");
  });

  test("Slack gets a name of its own only where Slack keeps ours", () => {
    const slackNames = MENU_COMMANDS.map(slackCommandName);
    expect(new Set(slackNames).size).toBe(slackNames.length);
    expect(slackNames).toContain("agent-status");
    expect(slackNames).not.toContain("status");
  });

  test("the help text is made from the list", () => {
    expect(HELP_TEXT.split("\n")).toEqual([
      "I'm an AI assistant. Just write to me. Commands:",
      "/new — start a fresh conversation (the old one stays readable)",
      "/stop — stop the answer in progress",
      "/status — model, runs in progress, replies waiting and what is left of your budget",
      "/goal — the goal I work toward; /goal <text> sets it, /goal done marks it reached",
      "/todo — my todo list for the goal",
      "/model — the models you can pick; /model NAME picks one for this conversation",
      "/forget — delete this conversation for good (asks to confirm with buttons, or /forget confirm)",
      "/export — this conversation as a Markdown file (a message where files can't be sent)",
      "/in 10m stretch — a reminder after a delay",
      "/at 2026-12-01 09:00 call mum — at a date and time",
      "/every 0 9 * * 1-5 summarise my inbox — recurring (cron or e.g. /every 2h ...)",
      "/schedules, /cancel <id>, /tz Europe/Berlin",
      "/approve <id>, /deny <id> — decide a tool call that waits for approval",
    ]);
  });

  test("the README's Slack app manifest lists every command as Slack registers it", () => {
    const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
    // Whitespace-insensitive: a formatter may wrap a long entry over several lines.
    const section = readme
      .slice(readme.indexOf("  slash_commands:"), readme.indexOf("oauth_config:"))
      .replace(/\s+/g, " ");
    const listed = [
      ...section.matchAll(
        /- \{ command: \/([^,]+), description: "([^"]+)"(?:, usage_hint: "([^"]+)")?,? \}/g,
      ),
    ];
    expect(listed.map(([, name, description, hint]) => ({ name, description, hint }))).toEqual(
      MENU_COMMANDS.map((c) => ({
        name: slackCommandName(c),
        description: c.description,
        hint:
          c.arguments.length === 0
            ? undefined
            : c.arguments.map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`)).join(" "),
      })),
    );
  });
});
