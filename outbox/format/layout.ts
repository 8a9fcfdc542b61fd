import { type Atom, type GapLevel, type Mark, textAtom } from "./atoms.ts";
import type { Dialect } from "./dialect.ts";
import type { Block, Inline, ListItem } from "./document.ts";

interface BlockContext {
  /** Rendered at the start of each continuation line: quote markers and list indentation. */
  readonly linePrefix: string;
  /** Blank lines would end a prefixed quote, so paragraphs inside one sit on adjacent lines. */
  readonly flatParagraphs: boolean;
  readonly quoteDepth: number;
}

interface InlineContext {
  readonly newline: string;
  readonly inLink: boolean;
}

const TOP: BlockContext = { linePrefix: "", flatParagraphs: false, quoteDepth: 0 };
const TASK_BOX = { none: "", open: "☐ ", done: "☑ " } as const;

/** Lays a document out as the atoms of one platform's markup. */
export function layoutDocument(blocks: readonly Block[], dialect: Dialect): Atom[] {
  const layout = new Layout(dialect);
  layout.blocks(blocks, TOP, "paragraph");
  return layout.atoms;
}

class Layout {
  readonly atoms: Atom[] = [];
  private readonly openMarks: Mark[] = [];
  /** True until text is written on the current line; only there is block syntax escaped. */
  private lineStart = true;

  constructor(private readonly dialect: Dialect) {}

  blocks(blocks: readonly Block[], ctx: BlockContext, separator: GapLevel): void {
    blocks.forEach((block, index) => {
      if (index > 0) this.gap(separator, ctx);
      this.block(block, ctx);
    });
  }

  private block(block: Block, ctx: BlockContext): void {
    const inline: InlineContext = { newline: newline(ctx), inLink: false };
    this.lineStart = true;
    switch (block.type) {
      case "paragraph":
        this.inlines(block.children, inline);
        return;
      case "heading":
        this.marked(this.dialect.heading(block.depth), () => this.inlines(block.children, inline));
        return;
      case "code":
        this.code(block.lang, block.text, ctx);
        return;
      case "list":
        this.list(block, ctx);
        return;
      case "quote": {
        const depth = ctx.quoteDepth + 1;
        const quote = this.dialect.quote(depth, ctx.linePrefix);
        const inner: BlockContext = {
          linePrefix: ctx.linePrefix + quote.linePrefix,
          flatParagraphs: ctx.flatParagraphs || quote.linePrefix !== "",
          quoteDepth: depth,
        };
        this.marked(quote.mark, () => this.blocks(block.children, inner, "paragraph"));
        return;
      }
      case "rule":
        this.atoms.push(textAtom(this.dialect.rule));
        return;
      case "table":
        this.code(undefined, tableText(block.header, block.rows), ctx);
        return;
    }
  }

  private list(block: Extract<Block, { type: "list" }>, ctx: BlockContext): void {
    const separator: GapLevel = block.loose ? "paragraph" : "line";
    block.items.forEach((item: ListItem, index) => {
      if (index > 0) this.gap(separator, ctx);
      const marker = block.ordered ? `${block.start + index}. ` : this.dialect.bullet;
      this.atoms.push(textAtom(marker + TASK_BOX[item.task]));
      const inner: BlockContext = { ...ctx, linePrefix: ctx.linePrefix + " ".repeat(marker.length) };
      item.children.forEach((child, childIndex) => {
        if (childIndex > 0) this.gap(separator, inner);
        this.block(child, inner);
      });
    });
  }

  private code(lang: string | undefined, text: string, ctx: BlockContext): void {
    const { mark, newline } = this.dialect.codeBlock(lang, ctx.linePrefix);
    const escapeCode = (part: string) => this.dialect.escapeCode(part);
    this.marked(mark, () => {
      text.split("\n").forEach((line, index) => {
        if (index > 0) this.atoms.push({ kind: "gap", level: "line", rendered: newline });
        // Whitespace in code is content: it stays attached to the word before it, and the
        // zero-width gaps between runs are where an over-long line may be cut.
        const runs = line.match(/\s*\S+\s*|\s+/g) ?? [];
        runs.forEach((run, runIndex) => {
          if (runIndex > 0) this.atoms.push({ kind: "gap", level: "word", rendered: "" });
          this.atoms.push(textAtom(run, escapeCode));
        });
      });
    });
  }

  private inlines(inlines: readonly Inline[], ctx: InlineContext): void {
    for (const inline of inlines) this.inline(inline, ctx);
  }

  private inline(inline: Inline, ctx: InlineContext): void {
    const styled = !ctx.inLink || this.dialect.marksInsideLinks;
    switch (inline.type) {
      case "text":
        this.text(inline.text, ctx, (part, lineStart) => this.dialect.escapeText(part, lineStart));
        return;
      case "break":
        this.atoms.push({ kind: "gap", level: "line", rendered: ctx.newline });
        this.lineStart = true;
        return;
      case "strong":
        this.marked(styled ? this.dialect.strong : undefined, () => this.inlines(inline.children, ctx));
        return;
      case "emphasis":
        this.marked(styled ? this.dialect.emphasis : undefined, () => this.inlines(inline.children, ctx));
        return;
      case "strike":
        this.marked(styled ? this.dialect.strike : undefined, () => this.inlines(inline.children, ctx));
        return;
      case "code": {
        const mark = ctx.inLink ? undefined : this.dialect.codeSpan(inline.text);
        this.marked(mark, () => this.text(inline.text, ctx, (part) => this.dialect.escapeCode(part)));
        return;
      }
      case "link":
        this.link(inline, ctx);
        return;
    }
  }

  private link(link: Extract<Inline, { type: "link" }>, ctx: InlineContext): void {
    const mark = ctx.inLink ? undefined : this.dialect.link(link.href, link.autolink);
    if (mark !== undefined) {
      this.marked(mark, () => this.inlines(link.children, { ...ctx, inLink: true }));
      return;
    }
    if (link.autolink) {
      this.atoms.push(textAtom(linkText(link), this.escapeUrl));
      this.lineStart = false;
      return;
    }
    this.inlines(link.children, { ...ctx, inLink: true });
    this.atoms.push(
      { kind: "gap", level: "word", rendered: " " },
      textAtom(`(${link.href})`, this.escapeUrl),
    );
    this.lineStart = false;
  }

  private readonly escapeUrl = (text: string): string => this.dialect.escapeUrl(text);

  /** Prose: lines become line gaps, runs of spaces become word gaps, the rest unbreakable words. */
  private text(text: string, ctx: InlineContext, render: (part: string, lineStart: boolean) => string): void {
    text.split("\n").forEach((line, lineIndex) => {
      if (lineIndex > 0) {
        this.atoms.push({ kind: "gap", level: "line", rendered: ctx.newline });
        this.lineStart = true;
      }
      for (const piece of line.split(/([ \t]+)/)) {
        if (piece === "") continue;
        if (/^[ \t]+$/.test(piece)) {
          this.atoms.push({ kind: "gap", level: "word", rendered: piece });
          continue;
        }
        const atLineStart = (part: string) => render(part, true);
        this.atoms.push(
          textAtom(piece, this.lineStart ? atLineStart : (part) => render(part, false), atLineStart),
        );
        this.lineStart = false;
      }
    });
  }

  /**
   * Wraps content in a mark, unless the same markup is already open: `*` inside `*` (bold inside
   * a Slack heading) would close it instead of nesting.
   */
  private marked(mark: Mark | undefined, content: () => void): void {
    const open = mark !== undefined && !this.openMarks.some((outer) => outer.open === mark.open);
    if (open) {
      this.atoms.push({ kind: "open", mark });
      this.openMarks.push(mark);
    }
    content();
    if (open) {
      this.openMarks.pop();
      this.atoms.push({ kind: "close", mark });
    }
  }

  private gap(level: GapLevel, ctx: BlockContext): void {
    const rendered = level === "paragraph" && !ctx.flatParagraphs ? `\n${newline(ctx)}` : newline(ctx);
    this.atoms.push({ kind: "gap", level, rendered });
  }
}

function newline(ctx: BlockContext): string {
  return `\n${ctx.linePrefix}`;
}

function linkText(link: Extract<Inline, { type: "link" }>): string {
  return link.children.map((child) => (child.type === "text" ? child.text : "")).join("");
}

/** Columns padded to their widest cell, so the table reads in a monospace block. */
function tableText(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    widths
      .map((width, column) => (cells[column] ?? "").padEnd(width))
      .join(" | ")
      .trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("-+-");
  return [line(header), rule, ...rows.map(line)].join("\n");
}
