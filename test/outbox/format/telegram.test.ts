import { describe, expect, test } from "bun:test";
import { renderMarkup } from "../../../outbox/format/index.ts";
import { telegramText } from "./markup.ts";

function telegram(markdown: string, maxChars = 4096): string[] {
  const { chunks, format } = renderMarkup(markdown, "telegram-html", { maxChars });
  expect(format).toBe("rich");
  for (const chunk of chunks) telegramText(chunk);
  return chunks;
}

const one = (markdown: string) => {
  const chunks = telegram(markdown);
  expect(chunks).toHaveLength(1);
  return chunks[0];
};

describe("telegram HTML", () => {
  test("escapes <, > and & in text, and leaves quotes alone", () => {
    expect(one('Use <b>&"tags"</b> & 1 < 2 > 0')).toBe(
      'Use &lt;b&gt;&amp;"tags"&lt;/b&gt; &amp; 1 &lt; 2 &gt; 0',
    );
  });

  test("emphasis, nested emphasis and strike map to b, i and s", () => {
    expect(one("**bold _italic inside_ bold** and *it* ~~gone~~")).toBe(
      "<b>bold <i>italic inside</i> bold</b> and <i>it</i> <s>gone</s>",
    );
  });

  test("inline code is escaped and holds no other tags", () => {
    expect(one("run `a <b> && **c**` now")).toBe("run <code>a &lt;b&gt; &amp;&amp; **c**</code> now");
  });

  test("fenced code keeps its language, lines and indentation", () => {
    expect(one("```ts\nif (a < b && c) {\n  return;\n}\n```")).toBe(
      '<pre><code class="language-ts">if (a &lt; b &amp;&amp; c) {\n  return;\n}</code></pre>',
    );
    expect(one("```\nplain\n```")).toBe("<pre>plain</pre>");
  });

  test("a language that is not an identifier is dropped rather than put in the attribute", () => {
    expect(one('```"><script>\nx\n```')).toBe("<pre>x</pre>");
  });

  test('links escape & and " in href; bare URLs stay text for Telegram to link', () => {
    expect(one('[the "docs"](https://example.com/?a=1&b="2") and https://example.org/x_y')).toBe(
      '<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">the "docs"</a> and https://example.org/x_y',
    );
  });

  test("a link Telegram cannot open is shown as text followed by its address", () => {
    expect(one("[run me](javascript:alert(1)) [rel](./page.md)")).toBe(
      "run me (javascript:alert(1)) rel (./page.md)",
    );
  });

  test("headings become bold lines; lists use • and numbers with nesting by indentation", () => {
    expect(one("## Plan\n\n- first\n- second\n  1. sub one\n  2. sub two\n\n3. three\n4. four")).toBe(
      "<b>Plan</b>\n\n• first\n• second\n  1. sub one\n  2. sub two\n\n3. three\n4. four",
    );
  });

  test("setext headings are headings too", () => {
    expect(one("Title\n=====\n\nSub\n---\n\ntext")).toBe("<b>Title</b>\n\n<b>Sub</b>\n\ntext");
  });

  test("a long single paragraph parses in linear time (marked's setext regex is slow under Bun)", () => {
    const paragraph = "word ".repeat(6_000).trim();
    const startedMs = performance.now();
    const chunks = telegram(paragraph);
    // Without the setext pre-check this takes seconds; with it, a few milliseconds.
    expect(performance.now() - startedMs).toBeLessThan(1_000);
    expect(chunks.join(" ")).toBe(paragraph);
  });

  test("task list items show their state", () => {
    expect(one("- [x] done\n- [ ] open")).toBe("• ☑ done\n• ☐ open");
  });

  test("blockquotes become one blockquote; nested quotes are flattened", () => {
    expect(one("> outer **bold**\n>\n> > inner")).toBe("<blockquote>outer <b>bold</b>\n\ninner</blockquote>");
  });

  test("tables are laid out in a pre block", () => {
    expect(one("| name | n |\n|---|---|\n| a<b | 10 |")).toBe("<pre>name | n\n-----+---\na&lt;b  | 10</pre>");
  });

  test("character references resolve once and are escaped once", () => {
    expect(one("AT&amp;T &lt;tag&gt; &copy;")).toBe("AT&amp;T &lt;tag&gt; &amp;copy;");
  });

  test("a cut inside bold and a link closes both and reopens them in the next message", () => {
    const words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    const chunks = telegram(`**[${words}](https://example.com/a)**`, 100);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.startsWith('<b><a href="https://example.com/a">')).toBe(true);
      expect(chunk.endsWith("</a></b>")).toBe(true);
      expect(chunk.length).toBeLessThanOrEqual(100);
    }
    expect(chunks.map((chunk) => telegramText(chunk)).join(" ")).toBe(words);
  });

  test("a link whose markup would fill half a message is shown as text and address instead", () => {
    const url = `https://example.com/${"a".repeat(60)}`;
    const chunks = telegram(`see [the page](${url}) now`, 100);
    expect(chunks.join(" ")).not.toContain("<a ");
    expect(chunks.map((chunk) => telegramText(chunk)).join(" ")).toBe(`see the page (${url}) now`);
  });

  test("blank input gives no messages", () => {
    expect(telegram("  \n\n ")).toEqual([]);
  });
});
