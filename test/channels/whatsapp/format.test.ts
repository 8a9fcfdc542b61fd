import { describe, expect, test } from "bun:test";
import { WHATSAPP_MAX_MESSAGE_CHARS, whatsappDialect } from "../../../channels/whatsapp/format.ts";
import { chunkAtoms } from "../../../outbox/format/chunk.ts";
import type { Dialect } from "../../../outbox/format/dialect.ts";
import { layoutDocument } from "../../../outbox/format/layout.ts";
import { parseMarkdown } from "../../../outbox/format/parse.ts";

// The dialect is written by shape (channels/ may not import outbox/): this is the check that it is one.
const dialect: Dialect = whatsappDialect;

function render(markdown: string, maxChars = WHATSAPP_MAX_MESSAGE_CHARS): string[] {
  return chunkAtoms(layoutDocument(parseMarkdown(markdown), dialect), maxChars);
}

describe("WhatsApp markup", () => {
  test("bold, italic, strike and inline code in WhatsApp's delimiters", () => {
    expect(render("**bold**, *italic*, ~~gone~~ and `npm test`")).toEqual([
      "*bold*, _italic_, ~gone~ and `npm test`",
    ]);
  });

  test("headings are bold, and bold inside a heading does not close it", () => {
    expect(render("# Plan for **today**\n\nDone.")).toEqual(["*Plan for today*\n\nDone."]);
  });

  test("links have no syntax: text then (url); bare URLs stay for WhatsApp to link", () => {
    expect(render("See [the docs](https://example.com/docs) or https://example.com")).toEqual([
      "See the docs (https://example.com/docs) or https://example.com",
    ]);
  });

  test("lists, quotes and code blocks", () => {
    expect(render("- one\n- two\n\n1. first\n2. second")).toEqual(["- one\n- two\n\n1. first\n2. second"]);
    expect(render("> quoted\n> more")).toEqual(["> quoted\n> more"]);
    expect(render("```ts\nconst a = 1;\n```")).toEqual(["```\nconst a = 1;\n```"]);
  });

  test("a fence inside code cannot close the block early", () => {
    expect(render("```\nprint('```')\n```")).toEqual(["```\nprint('``\u200b`')\n```"]);
  });

  test("long answers are cut into messages of at most 4096 characters, each closing its marks", () => {
    const paragraph = `**${"word ".repeat(300).trim()}**`;
    const chunks = render(`${paragraph}\n\n${paragraph}\n\n${paragraph}`);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(WHATSAPP_MAX_MESSAGE_CHARS);
      expect(chunk.startsWith("*") && chunk.endsWith("*")).toBe(true);
    }
  });
});
