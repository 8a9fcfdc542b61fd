/** The browser's Markdown subset: whatever the text, the only markup is the renderer's own. */
import { describe, expect, test } from "bun:test";
import { renderMarkdown } from "../../src/gateway/http/assets/markdown.ts";

describe("renderMarkdown", () => {
  test("formats bold, italic, code, code blocks and paragraphs", () => {
    expect(renderMarkdown("**bold** and *it* and _it2_ and `x < y`")).toBe(
      "<p><strong>bold</strong> and <em>it</em> and <em>it2</em> and <code>x &lt; y</code></p>",
    );
    expect(renderMarkdown("one\ntwo\n\nthree")).toBe("<p>one<br>two</p><p>three</p>");
    expect(renderMarkdown("before\n```ts\nconst a = <T>(x: T) => x;\n```\nafter")).toBe(
      "<p>before</p><pre><code>const a = &lt;T&gt;(x: T) =&gt; x;\n</code></pre><p>after</p>",
    );
  });

  test("an unclosed fence (a reply still streaming) renders as code to the end", () => {
    expect(renderMarkdown("see:\n```\nlet **x**")).toBe("<p>see:</p><pre><code>let **x**</code></pre>");
  });

  test("HTML is escaped everywhere, code spans are not formatted", () => {
    expect(renderMarkdown(`<script>alert("x")</script> <img src=x onerror='y'>`)).toBe(
      "<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &lt;img src=x onerror=&#39;y&#39;&gt;</p>",
    );
    expect(renderMarkdown("`**not bold**`")).toBe("<p><code>**not bold**</code></p>");
    expect(renderMarkdown("snake_case_name and 2*3*4")).toBe("<p>snake_case_name and 2*3*4</p>");
  });

  test("links only for http, https and mailto, opened with noopener", () => {
    expect(renderMarkdown("[docs](https://example.org/a?b=1&c=2)")).toBe(
      '<p><a href="https://example.org/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>',
    );
    expect(renderMarkdown("[x](javascript:alert(1))")).toBe("<p>[x](javascript:alert(1))</p>");
    expect(renderMarkdown('[x](https://a.org/"onmouseover="y)')).toBe(
      '<p><a href="https://a.org/&quot;onmouseover=&quot;y" target="_blank" rel="noopener noreferrer">x</a></p>',
    );
  });
});
