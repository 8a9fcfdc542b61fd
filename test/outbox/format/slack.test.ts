import { describe, expect, test } from "bun:test";
import { renderMarkup } from "../../../outbox/format/index.ts";
import { checkSlackMarkup, fenceCount } from "./markup.ts";

function slack(markdown: string, maxChars = 4000): string[] {
  const { chunks, format } = renderMarkup(markdown, "slack-mrkdwn", { maxChars });
  expect(format).toBe("rich");
  for (const chunk of chunks) checkSlackMarkup(chunk);
  return chunks;
}

const one = (markdown: string) => {
  const chunks = slack(markdown);
  expect(chunks).toHaveLength(1);
  return chunks[0];
};

describe("slack mrkdwn", () => {
  test("escapes &, < and > as entities and nothing else", () => {
    expect(one('<b>&"x"</b> <!channel> a > b')).toBe('&lt;b&gt;&amp;"x"&lt;/b&gt; &lt;!channel&gt; a &gt; b');
  });

  test("bold, italic, strike and nested emphasis use single delimiters", () => {
    expect(one("**bold _and italic_** then *it* and ~~struck~~")).toBe(
      "*bold _and italic_* then _it_ and ~struck~",
    );
  });

  test("inline code and code blocks; the language is dropped and fences in code are broken up", () => {
    expect(one("say `a<b`\n\n```python\nx = 1 & 2\nprint('```')\n```")).toBe(
      "say `a&lt;b`\n\n```\nx = 1 &amp; 2\nprint('``\u200b`')\n```",
    );
  });

  test("links use <url|text>; bare URLs are linked too; & in URLs is escaped and | encoded", () => {
    expect(one("[the **docs**](https://example.com/?a=1&b=2|3) or https://example.org")).toBe(
      "<https://example.com/?a=1&amp;b=2%7C3|the docs> or <https://example.org|https://example.org>",
    );
  });

  test("mail links and unsupported schemes", () => {
    expect(one("mail a@b.co or [x](ftp://host/file)")).toBe(
      "mail <mailto:a@b.co|a@b.co> or x (ftp://host/file)",
    );
  });

  test("headings are bold lines; lists are bullet and number lines", () => {
    expect(one("# Title\n\n- one\n- two\n  - deeper\n\n1. first\n2. second")).toBe(
      "*Title*\n\n• one\n• two\n  • deeper\n\n1. first\n2. second",
    );
  });

  test("bold inside a heading is not nested, since *…*…* would end the bold early", () => {
    expect(one("## The **key** point")).toBe("*The key point*");
  });

  test("a code span holding a backtick is shown as text, as Slack cannot escape it", () => {
    expect(one("run ``a`b`` now")).toBe("run a`b now");
  });

  test("a quote inside a list item has no > prefix, which Slack would show as a stray >", () => {
    expect(one("- item\n\n  > quoted")).toBe("• item\n\n  quoted");
  });

  test("quotes prefix every line, paragraphs inside stay adjacent so the quote does not end", () => {
    expect(one("> one\n> two\n>\n> three")).toBe("> one\n> two\n> three");
  });

  test("a code block cut in two is closed and reopened", () => {
    const code = Array.from({ length: 30 }, (_, index) => `line ${index} <tag>`).join("\n");
    const chunks = slack(`\`\`\`\n${code}\n\`\`\``, 200);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.startsWith("```\n")).toBe(true);
      expect(chunk.endsWith("\n```")).toBe(true);
      expect(fenceCount(chunk)).toBe(2);
    }
    const lines = chunks.flatMap((chunk) => chunk.split("\n").slice(1, -1));
    expect(lines.join("\n")).toBe(code.replace(/</g, "&lt;").replace(/>/g, "&gt;"));
  });
});
