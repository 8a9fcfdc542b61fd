import { describe, expect, test } from "bun:test";
import { type MarkupTarget, renderMarkup } from "../../../outbox/format/index.ts";
import { checkSlackMarkup, contentOf, fenceCount, matrixText, telegramText } from "./markup.ts";

/** The platforms whose markup the shared pipeline writes (the web's is tested in web.test.ts). */
type FormatPlatform = Exclude<MarkupTarget, "commonmark">;

/** A long, realistic model answer: sections with prose, lists, quotes, links and code. */
function longAnswer(): string {
  const sections: string[] = [];
  for (let index = 1; sections.join("\n\n").length < 10_000; index += 1) {
    sections.push(
      `## Step ${index}: configure the <service> & "client"`,
      `First, open the **configuration file** for part ${index} and check the _retry policy_: the default of ` +
        `\`maxRetries < 5\` is fine for most set-ups, but ~~never~~ rarely for batch jobs. See ` +
        `[the reference guide](https://docs.example.com/guide?part=${index}&lang=en) or https://example.org/faq_${index} ` +
        "for details. Characters such as <, > and & must survive untouched in every platform.",
      `- check the **token** for section ${index}\n- restart the worker\n  - wait for *ready*\n  - tail the logs\n- verify`,
      `> Note: a quote about step ${index} that is long enough to matter when messages are cut, ` +
        "with **bold** and a second line\n> that continues the same quote.",
      `\`\`\`typescript\n${Array.from(
        { length: 8 },
        (_, line) => `const value${line} = compute(${index}, ${line}) < limit && flag; // <ok> & "done"`,
      ).join("\n")}\n\`\`\``,
    );
  }
  return sections.join("\n\n");
}

const LIMITS: Readonly<Record<FormatPlatform, number>> = {
  "telegram-html": 4096,
  "discord-markdown": 2000,
  "slack-mrkdwn": 4000,
  "whatsapp-markdown": 4096,
  "matrix-html": 6000,
  plain: 4096,
};

describe("a 10,000-character answer", () => {
  const markdown = longAnswer();

  test("is at least 10,000 characters", () => {
    expect(markdown.length).toBeGreaterThanOrEqual(10_000);
  });

  for (const platform of Object.keys(LIMITS) as FormatPlatform[]) {
    test(`${platform}: chunks within ${LIMITS[platform]}, balanced, at least half full, nothing lost`, () => {
      const maxChars = LIMITS[platform];
      const whole = renderMarkup(markdown, platform, { maxChars: 1_000_000 }).chunks;
      expect(whole).toHaveLength(1);
      const { chunks } = renderMarkup(markdown, platform, { maxChars });

      const expectedAtLeast = Math.ceil(whole[0]!.length / maxChars);
      expect(chunks.length).toBeGreaterThanOrEqual(expectedAtLeast);
      expect(chunks.length).toBeLessThanOrEqual(expectedAtLeast + 2);
      chunks.forEach((chunk, index) => {
        expect(chunk.length).toBeLessThanOrEqual(maxChars);
        if (index < chunks.length - 1) expect(chunk.length).toBeGreaterThanOrEqual(maxChars / 2);
        expect(chunk).toBe(chunk.trim());
        if (platform === "telegram-html") telegramText(chunk);
        if (platform === "matrix-html") matrixText(chunk);
        if (platform === "slack-mrkdwn") checkSlackMarkup(chunk);
        if (platform === "slack-mrkdwn" || platform === "discord-markdown")
          expect(fenceCount(chunk) % 2).toBe(0);
      });
      expect(chunks.map((chunk) => contentOf(platform, chunk)).join("")).toBe(contentOf(platform, whole[0]!));
    });
  }

  test("a code block cut between messages reopens with its language (discord)", () => {
    const { chunks } = renderMarkup(markdown, "discord-markdown", { maxChars: 2000 });
    const continued = chunks.filter((chunk) => chunk.startsWith("```"));
    expect(continued.length).toBeGreaterThan(0);
    for (const chunk of continued) expect(chunk.startsWith("```typescript\n")).toBe(true);
  });
});
