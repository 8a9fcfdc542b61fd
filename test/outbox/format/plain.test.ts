import { describe, expect, test } from "bun:test";
import { renderPlain } from "../../../outbox/format/index.ts";

const plain = (markdown: string) => {
  const { chunks, format } = renderPlain(markdown, { maxChars: 4096 });
  expect(format).toBe("plain");
  expect(chunks).toHaveLength(1);
  return chunks[0];
};

describe("plain text", () => {
  test("drops emphasis and code markup and keeps characters as written", () => {
    expect(plain('**bold _it_** ~~s~~ `a<b>&"` <b>raw</b> 2\\*3')).toBe('bold it s a<b>&" <b>raw</b> 2*3');
  });

  test("links as text (url); bare URLs and mail addresses once", () => {
    expect(plain("[docs](https://example.com/x) https://example.org a@b.co ![logo](https://img/x.png)")).toBe(
      "docs (https://example.com/x) https://example.org a@b.co logo (https://img/x.png)",
    );
  });

  test("headings, lists, quotes and code blocks as readable lines", () => {
    expect(plain("# Title\n\n- a\n  - b\n1. c\n\n> q\n\n```js\nx();\n  y();\n```\n\n---\nend")).toBe(
      "Title\n\n• a\n  • b\n\n1. c\n\n> q\n\nx();\n  y();\n\n──────────\n\nend",
    );
  });
});
