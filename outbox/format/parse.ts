import { Lexer, type MarkedToken, type Token, Tokenizer, type Tokens } from "marked";
import { type Block, type HeadingDepth, type Inline, inlineText, type ListItem } from "./document.ts";

/**
 * Parses the model's Markdown (CommonMark + GFM) into switchboard's document model. Never throws
 * on odd input: anything the model writes renders as something.
 */
export function parseMarkdown(markdown: string): Block[] {
  return toBlocks(lexMarkdown(markdown));
}

/** marked's top-level tokens (GFM); their `raw` texts put together are `markdown` again. */
export function lexMarkdown(markdown: string): Token[] {
  return new Lexer({ gfm: true, breaks: false, tokenizer: new SetextCheckingTokenizer() }).lex(markdown);
}

/**
 * marked tries its setext-heading regex at every block; under Bun (JavaScriptCore) that regex
 * takes about a second on a 10,000-character paragraph (V8 takes under a millisecond). A setext
 * heading needs a `===` or `---` line before the next blank line, so look for one first.
 */
class SetextCheckingTokenizer extends Tokenizer {
  override lheading(src: string): Tokens.Heading | undefined {
    const blankLine = /\n[ \t]*\n/.exec(src);
    const block = blankLine === null ? src : src.slice(0, blankLine.index + 1);
    return /\n {0,3}(?:=+|-+)[ \t]*(?:\n|$)/.test(block) ? super.lheading(src) : undefined;
  }
}

function toBlocks(tokens: readonly Token[]): Block[] {
  const blocks: Block[] = [];
  for (const token of tokens) {
    const block = toBlock(token as MarkedToken);
    if (block !== undefined) blocks.push(block);
  }
  return blocks;
}

function toBlock(token: MarkedToken): Block | undefined {
  switch (token.type) {
    case "paragraph":
      return { type: "paragraph", children: toInlines(token.tokens) };
    case "text":
      // A tight list item's content arrives as a block-level text token.
      return {
        type: "paragraph",
        children: token.tokens ? toInlines(token.tokens) : textInlines(token.text),
      };
    case "heading":
      return { type: "heading", depth: toDepth(token.depth), children: toInlines(token.tokens) };
    case "code":
      return { type: "code", lang: codeLanguage(token.lang), text: token.text };
    case "list":
      return {
        type: "list",
        ordered: token.ordered,
        start: typeof token.start === "number" ? token.start : 1,
        loose: token.loose,
        items: token.items.map(toListItem),
      };
    case "blockquote":
      return { type: "quote", children: toBlocks(token.tokens) };
    case "hr":
      return { type: "rule" };
    case "table":
      return {
        type: "table",
        header: token.header.map(cellText),
        rows: token.rows.map((row) => row.map(cellText)),
      };
    case "html":
      // Raw HTML from the model is shown as written, never interpreted.
      return token.text.trim() === ""
        ? undefined
        : { type: "paragraph", children: textInlines(token.text.trimEnd()) };
    case "space":
    case "def":
      return undefined;
    default:
      return "raw" in token && token.raw.trim() !== ""
        ? { type: "paragraph", children: textInlines(token.raw.trim()) }
        : undefined;
  }
}

function toListItem(item: Tokens.ListItem): ListItem {
  const task = !item.task ? "none" : item.checked ? "done" : "open";
  const children = toBlocks(item.tokens.filter((token) => token.type !== "checkbox"));
  return { task, children };
}

function toInlines(tokens: readonly Token[]): Inline[] {
  const inlines: Inline[] = [];
  for (const token of tokens) inlines.push(...toInline(token as MarkedToken));
  return inlines;
}

function toInline(token: MarkedToken): Inline[] {
  switch (token.type) {
    case "text":
      return token.tokens ? toInlines(token.tokens) : textInlines(decodeEntities(token.text));
    case "escape":
      return [{ type: "text", text: token.text }];
    case "strong":
      return [{ type: "strong", children: toInlines(token.tokens) }];
    case "em":
      return [{ type: "emphasis", children: toInlines(token.tokens) }];
    case "del":
      return [{ type: "strike", children: toInlines(token.tokens) }];
    case "codespan":
      return [{ type: "code", text: token.text }];
    case "br":
      return [{ type: "break" }];
    case "link":
      return [
        {
          type: "link",
          href: token.autolink ? token.href : decodeEntities(token.href),
          autolink: token.autolink === true,
          children: token.autolink ? [{ type: "text", text: token.text }] : toInlines(token.tokens),
        },
      ];
    case "image": {
      const alt =
        token.text.trim() === "" ? [{ type: "text", text: "image" } as const] : toInlines(token.tokens);
      return [{ type: "link", href: decodeEntities(token.href), autolink: false, children: alt }];
    }
    case "html":
      return textInlines(token.text);
    default:
      return "raw" in token ? textInlines(token.raw) : [];
  }
}

function textInlines(text: string): Inline[] {
  return text === "" ? [] : [{ type: "text", text }];
}

function cellText(cell: Tokens.TableCell): string {
  return inlineText(toInlines(cell.tokens)).replace(/\s*\n\s*/g, " ");
}

function toDepth(depth: number): HeadingDepth {
  return Math.min(6, Math.max(1, Math.trunc(depth))) as HeadingDepth;
}

/** The fence's language if it is a plausible identifier; anything else is dropped, not escaped. */
function codeLanguage(lang: string | undefined): string | undefined {
  const first = lang?.trim().split(/\s+/)[0];
  return first !== undefined && /^[A-Za-z0-9_+#.-]{1,32}$/.test(first) ? first : undefined;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
};

/**
 * The lexer resolves numeric character references but leaves the named ones for an HTML
 * renderer; we render to other formats, so resolve the common ones here. Unknown names stay as
 * written.
 */
function decodeEntities(text: string): string {
  return text.replace(/&([a-z]+);/gi, (whole, name: string) => NAMED_ENTITIES[name.toLowerCase()] ?? whole);
}
