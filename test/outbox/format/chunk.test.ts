import { describe, expect, test } from "bun:test";
import { renderMarkup, renderPlain } from "../../../outbox/format/index.ts";
import { isSwitchboardError } from "../../../src/errors.ts";
import { telegramText } from "./markup.ts";

const plainChunks = (markdown: string, maxChars: number) => renderPlain(markdown, { maxChars }).chunks;

describe("chunk boundaries", () => {
  test("text that fits is one message", () => {
    expect(plainChunks("short answer", 32)).toEqual(["short answer"]);
  });

  test("prefers a paragraph break over a later line or word break", () => {
    const first = "alpha beta gamma delta epsilon zeta eta"; // 39 chars
    const second = "line one\nline two and more words here to overflow";
    expect(plainChunks(`${first}\n\n${second}`, 70)).toEqual([
      first,
      "line one\nline two and more words here to overflow",
    ]);
  });

  test("prefers a line break over a word break", () => {
    const text = "one two three four five six seven\neight nine ten eleven twelve thirteen";
    expect(plainChunks(text, 50)).toEqual([
      "one two three four five six seven",
      "eight nine ten eleven twelve thirteen",
    ]);
  });

  test("takes a weaker break when the strong one would leave the message under half full", () => {
    const text = `tiny\n\n${"word ".repeat(30).trim()}`;
    const chunks = plainChunks(text, 64);
    expect(chunks[0]?.startsWith("tiny\n\nword word")).toBe(true);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(64);
  });

  test("never splits a word that fits in a message", () => {
    const words = Array.from({ length: 200 }, (_, index) => `w${index}x${"y".repeat(index % 13)}`);
    const chunks = plainChunks(words.join(" "), 100);
    expect(chunks.flatMap((chunk) => chunk.split(" "))).toEqual(words);
  });

  test("splits a word longer than a message, and only that word", () => {
    const long = "z".repeat(150);
    const chunks = plainChunks(`start ${long} end`, 64);
    expect(chunks.join("")).toBe(`start ${long} end`);
    expect(chunks.every((chunk) => chunk.length <= 64)).toBe(true);
    expect(chunks[0]).toBe(`start ${"z".repeat(58)}`);
  });

  test("never cuts a surrogate pair or a grapheme cluster", () => {
    const family = "👨‍👩‍👧‍👦"; // 11 UTF-16 code units, one grapheme
    const chunks = plainChunks(family.repeat(20), 40);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(40);
      expect(chunk.replaceAll(family, "")).toBe("");
    }
    expect(chunks.join("")).toBe(family.repeat(20));
  });

  test("an over-long word of escapes is cut between escapes, never inside one", () => {
    const chunks = renderMarkup("&".repeat(100), "telegram-html", { maxChars: 48 }).chunks;
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(48);
      expect(chunk).toMatch(/^(?:&amp;)+$/);
    }
    expect(chunks.map(telegramText).join("")).toBe("&".repeat(100));
  });

  test("a code block is closed at the cut and reopened with its language", () => {
    const code = Array.from({ length: 40 }, (_, index) => `let v${index} = ${index} < 100 && true;`).join(
      "\n",
    );
    const chunks = renderMarkup(`\`\`\`ts\n${code}\n\`\`\``, "telegram-html", { maxChars: 300 }).chunks;
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.startsWith('<pre><code class="language-ts">')).toBe(true);
      expect(chunk.endsWith("</code></pre>")).toBe(true);
      expect(chunk.length).toBeLessThanOrEqual(300);
    }
    // Cuts fall between lines, so every line survives whole.
    expect(chunks.flatMap((chunk) => telegramText(chunk).split("\n"))).toEqual(code.split("\n"));
  });

  test("an empty element is not written: a cut just before a close drops the reopened mark", () => {
    const chunks = renderMarkup(`**${"bold ".repeat(12)}**`, "telegram-html", { maxChars: 40 }).chunks;
    for (const chunk of chunks) expect(chunk).not.toContain("<b></b>");
  });

  test("a message that would show only whitespace is not produced", () => {
    expect(renderMarkup("```\n   \n```", "telegram-html", { maxChars: 100 }).chunks).toEqual([]);
    const chunks = plainChunks(`\`\`\`\n${" ".repeat(50)}\n${"x".repeat(80)}\n\`\`\``, 40);
    for (const chunk of chunks) expect(chunk.trim()).not.toBe("");
    expect(chunks.join("").trim()).toBe("x".repeat(80));
  });

  test("maxChars below the minimum or not an integer is rejected with a fix in the message", () => {
    for (const maxChars of [0, 31, 100.5, Number.NaN]) {
      try {
        renderPlain("hello", { maxChars });
        throw new Error("expected a rejection");
      } catch (error) {
        expect(isSwitchboardError(error, "input_invalid")).toBe(true);
        expect((error as Error).message).toContain("maxMessageChars");
      }
    }
  });
});
