/** The web chat's dialect: the model's Markdown as written, cut between blocks. */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createWebChannel } from "../../../channels/web/index.ts";
import { renderMarkup } from "../../../outbox/format/index.ts";
import { formatRenderer } from "../../../outbox/render.ts";

const web = (markdown: string, maxChars = 8000) => renderMarkup(markdown, "commonmark", { maxChars });

describe("web markdown", () => {
  test("is the source unchanged: no Discord escapes of _ or *, headings, tables, quotes kept", () => {
    const markdown = [
      "Set OPENROUTER_API_KEY, then `/every 0 9 * * 1-5 summarise my inbox`.",
      "/every 0 9 * * 1-5 works too, and 2*3 = 6.",
      "#### Fourth-level heading",
      "| a | b |\n|---|---|\n| 1 | 2 |",
      "> quoted\n>> nested",
      "See [the docs](https://en.wikipedia.org/wiki/Foo_(bar)) or https://example.com/a_(b).",
    ].join("\n\n");
    expect(web(markdown)).toEqual({ chunks: [markdown], format: "rich" });
  });

  test("the outbox renders web replies with it: the web channel's markup is CommonMark, not Discord's", () => {
    const { markup } = createWebChannel();
    expect(formatRenderer.render("OPENROUTER_API_KEY and * *", markup, "rich", 8000).chunks).toEqual([
      "OPENROUTER_API_KEY and * *",
    ]);
    expect(formatRenderer.render("OPENROUTER_API_KEY", "discord-markdown", "rich", 2000).chunks).toEqual([
      "OPENROUTER\\_API\\_KEY",
    ]);
  });

  test("blank input gives no chunks", () => {
    expect(web("").chunks).toEqual([]);
    expect(web(" \n\n \t\n").chunks).toEqual([]);
  });

  test("a long answer is cut between blocks, so a table or a code block stays whole", () => {
    const table = `| n | square |\n|---|---|\n${Array.from({ length: 20 }, (_, i) => `| ${i} | ${i * i} |`).join("\n")}`;
    const code = `\`\`\`ts\n${Array.from({ length: 15 }, (_, i) => `const v${i} = ${i};`).join("\n")}\n\`\`\``;
    const blocks = [table, code, "A paragraph after them.", table];
    const { chunks } = web(blocks.join("\n\n"), 400);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(400);
    expect(chunks).toEqual(
      [table, code, "A paragraph after them.", table].reduce<string[]>((acc, block) => {
        const last = acc.at(-1);
        if (last !== undefined && last.length + 2 + block.length <= 400)
          acc[acc.length - 1] = `${last}\n\n${block}`;
        else acc.push(block);
        return acc;
      }, []),
    );
  });

  test("a single block longer than a message is cut by the shared pipeline, fences balanced", () => {
    const code = `\`\`\`\n${"x = 1\n".repeat(200)}\`\`\``;
    const { chunks } = web(code, 300);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(300);
      expect(chunk.startsWith("```")).toBe(true);
      expect(chunk.endsWith("```")).toBe(true);
    }
  });

  test("chunks fit and, put back together, hold the source's text (property)", () => {
    const block = fc.oneof(
      // No fences in prose: an unclosed one would swallow the rest into one oversized block.
      fc.string({ minLength: 1, maxLength: 120 }).map((s) => s.replace(/\n/g, " ").replace(/[`~]/g, "'")),
      fc.constantFrom("- a\n- b", "| x |\n|---|\n| 1 |", "```\ncode\n```", "> q", "# H"),
    );
    fc.assert(
      fc.property(
        fc.array(block, { maxLength: 30 }),
        fc.integer({ min: 200, max: 800 }),
        (blocks, maxChars) => {
          const markdown = blocks.join("\n\n");
          const { chunks } = web(markdown, maxChars);
          for (const chunk of chunks) {
            expect(chunk.length).toBeLessThanOrEqual(maxChars);
            expect(chunk.trim()).not.toBe("");
          }
          // No block here is longer than a message, so nothing is escaped: only whitespace differs.
          expect(chunks.join("").replace(/\s+/g, "")).toBe(markdown.replace(/\s+/g, ""));
        },
      ),
      { numRuns: 200 },
    );
  });
});
