/**
 * What the chat shows, end to end: one gateway process serving Telegram, Discord and Slack (Socket
 * Mode) against their emulators. A 10,000-character answer is cut into messages within each
 * platform's limit, complete and in order with code blocks balanced; Markdown with code, a link
 * and characters that need escaping renders in each platform's own markup.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { APIUser } from "discord.js";
import { type DiscordEmulator, startDiscordEmulator } from "../emulators/discord/index.ts";
import { type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import {
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { type GatewayProcess, startGatewayProcess } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

/** Starting a gateway process with three channels takes a few seconds on a busy machine. */
const GATEWAY_START_MS = 25_000;
const SLACK_USER = "U0ALICE";
const SLACK_DM = "D0ALICE";

/**
 * A long answer of numbered tokens (`t0001`…) in headings, paragraphs and code blocks, one of them
 * longer than a Discord message. Every token appears once, so their order shows what arrived.
 */
function longAnswer(minChars: number): { markdown: string; tokens: string[] } {
  const tokens: string[] = [];
  const next = () => {
    const token = `t${String(tokens.length + 1).padStart(4, "0")}`;
    tokens.push(token);
    return token;
  };
  const words = (n: number) => Array.from({ length: n }, next).join(" ");
  const code = (lines: number) =>
    `\`\`\`ts\n${Array.from({ length: lines }, () => `const ${next()} = "${next()}";`).join("\n")}\n\`\`\``;
  const blocks: string[] = [];
  let length = 0;
  for (let section = 0; length < minChars; section++) {
    const part = [
      `## Section ${next()}`,
      `Some **${words(2)}** then ${words(40)}.`,
      words(30),
      // The third section's code block (~2,400 characters) cannot fit one Discord message.
      code(section === 2 ? 90 : 8),
    ];
    blocks.push(...part);
    length = blocks.join("\n\n").length;
  }
  return { markdown: blocks.join("\n\n"), tokens };
}

const LONG = longAnswer(10_000);
const RICH_MARKDOWN =
  'Here is **bold** and a [link](https://example.com/a?b=1&c=2) and chars <b>&"\n\n' +
  '```js\nif (a < b && c > "d") {}\n```';
const tokensIn = (texts: string[]): string[] => [...texts.join("\n").matchAll(/t\d{4}/g)].map((m) => m[0]);
const fences = (text: string) => text.split("```").length - 1;

const dir = tempDir("switchboard-e2e-outbox-render-");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
let discord: DiscordEmulator;
let slack: SlackEmulator;
let gateway: GatewayProcess | undefined;
let discordUser: APIUser;
let discordDm: string;
const alice = user(3001, "Alice");

beforeAll(async () => {
  llm = startFakeLlmServer({
    rules: [
      { match: { lastUserContains: "long answer please" }, reply: { kind: "text", text: LONG.markdown } },
      { match: { lastUserContains: "show me markdown" }, reply: { kind: "text", text: RICH_MARKDOWN } },
    ],
  });
  telegram = startTelegramEmulator();
  discord = startDiscordEmulator({ heartbeatIntervalMs: 1_000 });
  slack = startSlackEmulator();
  discordUser = discord.createUser("alice");
  discordDm = discord.dmChannelId(discordUser.id);
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      surfaces: { "*:dm": { inputPolicy: "queue", delivery: "terminal" } },
      extra: {
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.url,
        TELEGRAM_ALLOWED_USERS: String(alice.id),
        DISCORD_BOT_TOKEN: discord.token,
        DISCORD_API_URL: discord.apiUrl,
        DISCORD_ALLOWED_USERS: discordUser.id,
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_APP_TOKEN: slack.appToken,
        SLACK_API_URL: slack.apiUrl,
        SLACK_ALLOWED_USERS: SLACK_USER,
      },
    }),
    GATEWAY_START_MS,
  );
}, GATEWAY_START_MS + 1_000);
afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await Promise.all([telegram.close(), discord.close(), slack.close(), llm.stop()]);
  dir.cleanup();
}, GATEWAY_START_MS);

const telegramSends = () =>
  telegram.callsOf("sendMessage").filter((call) => Number(call.params.chat_id) === alice.id);
const discordAnswers = () =>
  discord.visibleMessages(discordDm).filter((message) => message.author.id === discord.bot.id);
const slackAnswers = () =>
  slack.messages(SLACK_DM).filter((message) => message.user === slack.identity.botUserId);

/** Asks the same question on all three platforms and waits until each one's `doneOn` check holds. */
async function askEverywhere(
  text: string,
  doneOn: { telegram: () => boolean; discord: () => boolean; slack: () => boolean },
) {
  telegram.incoming({ chat: privateChat(alice), from: alice, text });
  discord.sendDm(discordUser.id, text);
  slack.pushEvent(slack.events.dm({ user: SLACK_USER, text }));
  await telegram.waitFor(doneOn.telegram, 30_000, "the Telegram answer");
  await discord.waitFor(doneOn.discord, 30_000, "the Discord answer");
  await slack.waitFor(doneOn.slack, 30_000, "the Slack answer");
}

describe("a 10,000-character answer", () => {
  test("arrives complete and in order, each message within the limit, code blocks balanced", async () => {
    expect(LONG.markdown.length).toBeGreaterThanOrEqual(10_000);
    const complete = (texts: () => string[]) => () => tokensIn(texts()).length >= LONG.tokens.length;
    await askEverywhere("long answer please", {
      telegram: complete(() => telegramSends().map((call) => String(call.params.text))),
      discord: complete(() => discordAnswers().map((message) => message.content)),
      slack: complete(() => slackAnswers().map((message) => message.text)),
    });
    await waitUntilSettled(join(dir.path, "gateway.sqlite"));

    const tg = telegram.messages(alice.id).filter((message) => message.fromBot);
    const tgSent = telegramSends();
    expect(tgSent.every((call) => call.response?.ok === true && call.params.parse_mode === "HTML")).toBe(
      true,
    );
    expect(tgSent.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...tgSent.map((call) => String(call.params.text).length))).toBeLessThanOrEqual(4096);
    for (const call of tgSent) {
      const sent = String(call.params.text);
      expect(sent.split("<pre>").length).toBe(sent.split("</pre>").length);
    }
    expect(tokensIn(tg.map((message) => message.visibleText))).toEqual(LONG.tokens);

    const dc = discordAnswers().map((message) => message.content);
    expect(dc.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...dc.map((content) => content.length))).toBeLessThanOrEqual(2000);
    expect(dc.every((content) => fences(content) % 2 === 0)).toBe(true);
    expect(tokensIn(dc)).toEqual(LONG.tokens);

    const sl = slackAnswers();
    expect(sl.length).toBeGreaterThanOrEqual(3);
    expect(sl.every((message) => message.mrkdwn && !message.truncated)).toBe(true);
    expect(Math.max(...sl.map((message) => message.text.length))).toBeLessThanOrEqual(4000);
    expect(sl.every((message) => fences(message.text) % 2 === 0)).toBe(true);
    expect(tokensIn(sl.map((message) => message.text))).toEqual(LONG.tokens);
  }, 60_000);
});

describe("Markdown with code, a link and characters that need escaping", () => {
  test("renders in each platform's markup", async () => {
    const shows = (texts: () => string[]) => () => texts().some((text) => text.includes("if (a"));
    await askEverywhere("show me markdown", {
      telegram: shows(() =>
        telegram
          .messages(alice.id)
          .filter((message) => message.fromBot)
          .map((message) => message.visibleText),
      ),
      discord: shows(() => discordAnswers().map((message) => message.content)),
      slack: shows(() => slackAnswers().map((message) => message.text)),
    });

    const tg = telegram
      .messages(alice.id)
      .filter((message) => message.fromBot)
      .at(-1)!;
    expect(tg.parseMode).toBe("HTML");
    expect(tg.text).toBe(
      'Here is <b>bold</b> and a <a href="https://example.com/a?b=1&amp;c=2">link</a> and chars &lt;b&gt;&amp;"' +
        '\n\n<pre><code class="language-js">if (a &lt; b &amp;&amp; c &gt; "d") {}</code></pre>',
    );
    expect(tg.visibleText).toBe('Here is bold and a link and chars <b>&"\n\nif (a < b && c > "d") {}');

    expect(discordAnswers().at(-1)!.content).toBe(
      'Here is **bold** and a [link](https://example.com/a?b=1&c=2) and chars <b>&"\n\n' +
        '```js\nif (a < b && c > "d") {}\n```',
    );

    const sl = slackAnswers().at(-1)!;
    expect(sl.mrkdwn).toBe(true);
    expect(sl.text).toBe(
      'Here is *bold* and a <https://example.com/a?b=1&amp;c=2|link> and chars &lt;b&gt;&amp;"\n\n' +
        '```\nif (a &lt; b &amp;&amp; c &gt; "d") {}\n```',
    );
  }, 45_000);
});
