import { describe, expect, test } from "bun:test";
import { renderMarkup } from "../../../outbox/format/index.ts";
import { fenceCount } from "./markup.ts";

function discord(markdown: string, maxChars = 2000): string[] {
  const { chunks, format } = renderMarkup(markdown, "discord-markdown", { maxChars });
  expect(format).toBe("rich");
  for (const chunk of chunks) expect(fenceCount(chunk) % 2).toBe(0);
  return chunks;
}

const one = (markdown: string) => {
  const chunks = discord(markdown);
  expect(chunks).toHaveLength(1);
  return chunks[0];
};

describe("discord markdown", () => {
  test("HTML-ish text passes through; Markdown characters that were literal stay literal", () => {
    expect(one('<b>&"x"</b> snake_case 2\\*3 a|b')).toBe('<b>&"x"</b> snake\\_case 2\\*3 a\\|b');
  });

  test("block markers are escaped only at the start of a line", () => {
    expect(one("\\# not a heading, but # here is fine\n\\> no quote")).toBe(
      "\\# not a heading, but # here is fine\n\\> no quote",
    );
  });

  test("emphasis, nested emphasis and strike", () => {
    expect(one("**bold _it_** and _it **bold**_ ~~gone~~")).toBe("**bold *it*** and *it **bold*** ~~gone~~");
  });

  test("code spans and blocks are kept as they are, with language", () => {
    expect(one('`a_b*c` and ``x`y``\n\n```rust\nlet s = "**not bold**";\n```')).toBe(
      '`a_b*c` and `` x`y ``\n\n```rust\nlet s = "**not bold**";\n```',
    );
  });

  test("headings keep # to ###; deeper ones become bold", () => {
    expect(one("# One\n\n## Two\n\n### Three\n\n#### Four")).toBe("# One\n\n## Two\n\n### Three\n\n**Four**");
  });

  test("masked links for http(s); bare URLs are left unescaped for Discord to link", () => {
    expect(one("[the *docs*](https://example.com/a?b=1) and https://example.org/x_y")).toBe(
      "[the *docs*](https://example.com/a?b=1) and https://example.org/x_y",
    );
  });

  test("link targets with parentheses are encoded", () => {
    expect(one("[wiki](<https://en.wikipedia.org/wiki/Go_(game)>)")).toBe(
      "[wiki](https://en.wikipedia.org/wiki/Go_%28game%29)",
    );
  });

  test("lists, nested lists and quotes", () => {
    expect(one("- a\n- b\n  - c\n\n1. one\n2. two\n\n> quoted\n> - item")).toBe(
      "- a\n- b\n  - c\n\n1. one\n2. two\n\n> quoted\n> - item",
    );
  });

  test("a code block inside a quote keeps the quote prefix on every line, also across a cut", () => {
    const code = Array.from({ length: 20 }, (_, index) => `step ${index}`).join("\n");
    const chunks = discord(`> \`\`\`sh\n> ${code.replace(/\n/g, "\n> ")}\n> \`\`\``, 100);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      for (const line of chunk.split("\n")) expect(line.startsWith("> ")).toBe(true);
      expect(chunk.startsWith("> ```sh\n")).toBe(true);
      expect(chunk.endsWith("\n> ```")).toBe(true);
    }
  });
});
