/** The matrix-html dialect through the outbox's renderer, and the allowed-subset filter on what is sent. */
import { describe, expect, test } from "bun:test";
import { htmlToPlain, sanitizeMatrixHtml, toMatrixContent } from "../../../channels/matrix/index.ts";
import { renderMarkup } from "../../../outbox/format/index.ts";

const render = (markdown: string) =>
  renderMarkup(markdown, "matrix-html", { maxChars: 6_000 }).chunks.join("");

describe("matrix-html", () => {
  test("Markdown becomes the allowed subset: strong, em, del, code, pre with a language, links, quotes", () => {
    expect(render("# Title\n\n**bold** _it_ ~~gone~~ `a<b` [docs](https://example.org/?a=1&b=2)")).toBe(
      '<strong>Title</strong>\n\n<strong>bold</strong> <em>it</em> <del>gone</del> <code>a&lt;b</code> <a href="https://example.org/?a=1&amp;b=2">docs</a>',
    );
    expect(render("```ts\nconst x = 1 < 2;\n```")).toBe(
      '<pre><code class="language-ts">const x = 1 &lt; 2;</code></pre>',
    );
    expect(render("> quoted\n\n- one\n- two")).toBe("<blockquote>quoted</blockquote>\n\n• one\n• two");
    // A link Matrix clients would not follow keeps its text only.
    expect(render("[run](javascript:alert(1))")).not.toContain("href");
  });

  test("the event: HTML with <br> outside <pre>, a plain body with each link's address", () => {
    const html = render("**Hi** [docs](https://example.org)\nline two\n\n```\nkeep\nlines\n```");
    expect(toMatrixContent(html, "rich")).toEqual({
      msgtype: "m.text",
      body: "Hi docs (https://example.org)\nline two\n\nkeep\nlines",
      format: "org.matrix.custom.html",
      formatted_body:
        '<strong>Hi</strong> <a href="https://example.org">docs</a><br>line two<br><br><pre><code>keep\nlines</code></pre>',
    });
    expect(toMatrixContent("plain *text*", "plain", "m.notice")).toEqual({
      msgtype: "m.notice",
      body: "plain *text*",
    });
  });

  test("anything outside the allowed subset is escaped as text, never passed on", () => {
    expect(sanitizeMatrixHtml('<img src="x" onerror="alert(1)"><b onclick="x">b</b><script>x</script>')).toBe(
      '&lt;img src="x" onerror="alert(1)"&gt;<b>b</b>&lt;script&gt;x&lt;/script&gt;',
    );
    expect(sanitizeMatrixHtml('<a href="javascript:alert(1)">x</a><code class="evil">y</code>')).toBe(
      "<a>x</a><code>y</code>",
    );
    expect(htmlToPlain("a &amp; b &lt;c&gt;")).toBe("a & b <c>");
  });
});
