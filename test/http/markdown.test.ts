/**
 * The pages' Markdown: marked with a renderer that shows raw HTML as text and checks link
 * targets (the DOM sanitiser on top is exercised in Chromium, browser.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { markdownToHtml, safeHref } from "../../src/gateway/http/assets/markdown.ts";
import { XSS_PAYLOADS } from "./support/xss-corpus.ts";

const html = (markdown: string) => markdownToHtml(markdown).trim();

describe("markdownToHtml", () => {
  test("formats emphasis, code, code blocks, paragraphs and line breaks", () => {
    expect(html("**bold** and *it* and _it2_ and `x < y`")).toBe(
      "<p><strong>bold</strong> and <em>it</em> and <em>it2</em> and <code>x &lt; y</code></p>",
    );
    expect(html("one\ntwo\n\nthree")).toBe("<p>one<br>two</p>\n<p>three</p>");
    expect(html("```ts\nconst a = <T>(x: T) => x;\n```")).toBe(
      '<pre><code class="language-ts">const a = &lt;T&gt;(x: T) =&gt; x;\n</code></pre>',
    );
  });

  test("lists, headings, tables, quotes and autolinks", () => {
    expect(html("- a\n- b\n\n1. one\n2. two")).toBe(
      "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<ol>\n<li>one</li>\n<li>two</li>\n</ol>",
    );
    expect(html("#### Four")).toBe("<h4>Four</h4>");
    expect(html("| a | b |\n|---|:-:|\n| 1 | 2 |")).toContain('<th align="center">b</th>');
    expect(html("> quoted")).toBe("<blockquote>\n<p>quoted</p>\n</blockquote>");
    expect(html("see https://example.org/x")).toBe(
      '<p>see <a href="https://example.org/x" target="_blank" rel="noopener noreferrer">https://example.org/x</a></p>',
    );
  });

  test("links with parentheses in the URL keep them", () => {
    expect(
      html("[Foo](https://en.wikipedia.org/wiki/Foo_(bar)) and https://en.wikipedia.org/wiki/Baz_(qux)"),
    ).toBe(
      '<p><a href="https://en.wikipedia.org/wiki/Foo_(bar)" target="_blank" rel="noopener noreferrer">Foo</a> and ' +
        '<a href="https://en.wikipedia.org/wiki/Baz_(qux)" target="_blank" rel="noopener noreferrer">https://en.wikipedia.org/wiki/Baz_(qux)</a></p>',
    );
  });

  test("snake_case and cron asterisks stay as written", () => {
    expect(html("OPENROUTER_API_KEY and /every 0 9 * * 1-5")).toBe(
      "<p>OPENROUTER_API_KEY and /every 0 9 * * 1-5</p>",
    );
  });

  test("links only for http, https and mailto; images become links", () => {
    expect(safeHref("mailto:a@example.org")).toBe("mailto:a@example.org");
    for (const bad of ["javascript:alert(1)", "data:text/html,x", "/relative", " JAVASCRIPT:x", "vbscript:x"])
      expect(safeHref(bad)).toBeNull();
    expect(html("[x](javascript:alert(1))")).toBe("<p>x</p>");
    expect(html("![alt](https://example.org/a.png)")).toBe(
      '<p><a href="https://example.org/a.png" target="_blank" rel="noopener noreferrer">alt</a></p>',
    );
  });

  test("no payload of the XSS corpus yields a tag, attribute or scheme of its own", () => {
    for (const payload of XSS_PAYLOADS) {
      const out = markdownToHtml(payload);
      const tags = [...out.matchAll(/<\/?([a-z0-9]+)/gi)].map((m) => m[1]!.toLowerCase());
      for (const tag of tags)
        expect(["p", "br", "code", "pre", "a", "table", "thead", "tbody", "tr", "th", "td"]).toContain(tag);
      const attributes = [...out.matchAll(/\s([a-z-]+)="/gi)].map((m) => m[1]!.toLowerCase());
      for (const attribute of attributes)
        expect(["href", "target", "rel", "class", "align"]).toContain(attribute);
      for (const [, href] of out.matchAll(/href="([^"]*)"/g))
        expect(href).toMatch(/^(?:https?:\/\/|mailto:)/);
    }
  });
});
