import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { type MarkupTarget, renderMarkup } from "../../../outbox/format/index.ts";
import { checkSlackMarkup, contentOf, fenceCount, matrixText, telegramText } from "./markup.ts";

/** The platforms whose markup the shared pipeline writes (the web's is tested in web.test.ts). */
type FormatPlatform = Exclude<MarkupTarget, "commonmark">;

const PLATFORMS: readonly FormatPlatform[] = [
  "telegram-html",
  "slack-mrkdwn",
  "discord-markdown",
  "whatsapp-markdown",
  "matrix-html",
  "plain",
];
const RUNS = Number(process.env.FORMAT_RUNS ?? 150);

const letters = fc.string({ unit: fc.constantFrom(..."abcdefghijklmnop"), minLength: 1, maxLength: 9 });
const tricky = fc.constantFrom(
  "<b>",
  "</i>",
  "&",
  "&amp;",
  "&lt;",
  "&copy;",
  "&#65;",
  '"q"',
  "a<b",
  "x>y",
  "AT&T",
  "*",
  "_",
  "~",
  "|",
  "#",
  ">",
  "\\*",
  "snake_case",
  "1.",
  "-",
  "[x]",
  "é",
  "😀",
  "👨‍👩‍👧",
  "\u00a0",
);
const longWord = fc.string({ unit: fc.constantFrom("a", "b", "&", "<", "é"), minLength: 40, maxLength: 700 });
const word = fc.oneof(
  { weight: 8, arbitrary: letters },
  { weight: 3, arbitrary: tricky },
  { weight: 1, arbitrary: longWord },
);
const words = fc.array(word, { minLength: 1, maxLength: 12 }).map((list) => list.join(" "));
const urlPath = fc.string({ unit: fc.constantFrom(..."abc_-.?=&"), maxLength: 20 });
const codeText = fc.string({
  unit: fc.constantFrom("a", "b", " ", "<", "&", "*", "_", '"'),
  minLength: 1,
  maxLength: 30,
});

const inline = fc.oneof(
  { weight: 6, arbitrary: words },
  { weight: 1, arbitrary: words.map((text) => `**${text}**`) },
  { weight: 1, arbitrary: words.map((text) => `_${text}_`) },
  { weight: 1, arbitrary: words.map((text) => `~~${text}~~`) },
  { weight: 1, arbitrary: fc.tuple(words, words).map(([outer, inner]) => `**${outer} _${inner}_**`) },
  { weight: 1, arbitrary: codeText.map((code) => `\`${code}\``) },
  {
    weight: 1,
    arbitrary: fc.tuple(words, urlPath).map(([text, path]) => `[${text}](https://example.com/${path})`),
  },
  { weight: 1, arbitrary: urlPath.map((path) => `https://example.org/x${path}`) },
);
const line = fc.array(inline, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(" "));
const paragraph = fc.array(line, { minLength: 1, maxLength: 4 }).map((lines) => lines.join("\n"));
const codeBlock = fc
  .tuple(fc.constantFrom("", "ts", "python", "sh"), fc.array(codeText, { minLength: 1, maxLength: 30 }))
  .map(([lang, lines]) => `\`\`\`${lang}\n${lines.join("\n")}\n\`\`\``);
const list = fc
  .tuple(fc.boolean(), fc.array(line, { minLength: 1, maxLength: 6 }), fc.option(line))
  .map(([ordered, items, nested]) => {
    const rendered = items.map((item, index) => `${ordered ? `${index + 1}.` : "-"} ${item}`);
    if (nested !== null) rendered.push(`${ordered ? "   " : "  "}- ${nested}`);
    return rendered.join("\n");
  });
const block = fc.oneof(
  { weight: 5, arbitrary: paragraph },
  { weight: 1, arbitrary: line.map((text) => `## ${text}`) },
  { weight: 2, arbitrary: list },
  { weight: 1, arbitrary: paragraph.map((text) => text.replace(/^/gm, "> ")) },
  { weight: 2, arbitrary: codeBlock },
  { weight: 1, arbitrary: fc.constant("---") },
);
const markdownish = fc.array(block, { minLength: 1, maxLength: 10 }).map((blocks) => blocks.join("\n\n"));

/** Anything at all, weighted towards Markdown's special characters. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.constantFrom(..."*_~`#>-+[]()!<>&\\|\n \t=1."),
    fc.constantFrom("a", "é", "😀"),
    fc.string(),
  ),
  maxLength: 400,
});

function checkChunks(platform: FormatPlatform, chunks: readonly string[], maxChars: number): void {
  for (const chunk of chunks) {
    expect(chunk.length).toBeLessThanOrEqual(maxChars);
    expect(chunk.trim()).not.toBe("");
    if (platform === "telegram-html") telegramText(chunk);
    if (platform === "matrix-html") matrixText(chunk);
    if (platform === "slack-mrkdwn") checkSlackMarkup(chunk);
    if (platform === "slack-mrkdwn" || platform === "discord-markdown") expect(fenceCount(chunk) % 2).toBe(0);
    if (platform === "telegram-html" || platform === "slack-mrkdwn" || platform === "matrix-html")
      expect(chunk).not.toMatch(/&[#a-z0-9]*$/i);
  }
}

describe("for markdown-ish answers", () => {
  for (const platform of PLATFORMS) {
    test(`${platform}: chunks fit, are well-formed on their own, and lose no text`, () => {
      fc.assert(
        // From 300 up, no generated link or code fence needs more than half a message, so no
        // mark falls back to text and the chunked content must equal the unchunked content.
        fc.property(markdownish, fc.integer({ min: 300, max: 900 }), (markdown, maxChars) => {
          const { chunks } = renderMarkup(markdown, platform, { maxChars });
          checkChunks(platform, chunks, maxChars);
          const whole = renderMarkup(markdown, platform, { maxChars: 10_000_000 }).chunks;
          expect(whole.length).toBeLessThanOrEqual(1);
          const expected = whole.length === 0 ? "" : contentOf(platform, whole[0]!);
          expect(chunks.map((chunk) => contentOf(platform, chunk)).join("")).toBe(expected);
        }),
        { numRuns: RUNS },
      );
    }, 20_000);
  }
});

describe("for arbitrary text and small limits", () => {
  for (const platform of PLATFORMS) {
    test(`${platform}: never throws, chunks fit and are well-formed`, () => {
      fc.assert(
        fc.property(
          fc.oneof(anyText, markdownish),
          fc.integer({ min: 32, max: 200 }),
          (markdown, maxChars) => {
            checkChunks(platform, renderMarkup(markdown, platform, { maxChars }).chunks, maxChars);
          },
        ),
        { numRuns: RUNS },
      );
    }, 20_000);
  }

  test("plain: no text is lost at any limit", () => {
    fc.assert(
      fc.property(fc.oneof(anyText, markdownish), fc.integer({ min: 32, max: 200 }), (markdown, maxChars) => {
        const { chunks } = renderMarkup(markdown, "plain", { maxChars });
        const whole = renderMarkup(markdown, "plain", { maxChars: 10_000_000 }).chunks;
        expect(chunks.map((chunk) => contentOf("plain", chunk)).join("")).toBe(
          contentOf("plain", whole.join("")),
        );
      }),
      { numRuns: RUNS },
    );
  }, 20_000);
});
