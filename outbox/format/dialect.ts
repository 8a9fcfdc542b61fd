import type { Mark } from "./atoms.ts";
import type { HeadingDepth } from "./document.ts";

/**
 * What one platform's markup looks like. layout.ts walks the document and asks the dialect for
 * escapes and marks; a mark left undefined means the platform shows that content unstyled.
 */
export interface Dialect {
  /** Escapes prose. `lineStart`: the text begins a line, where block syntax (`#`, `>`) is recognised. */
  escapeText(text: string, lineStart: boolean): string;
  /** Escapes the inside of code spans and code blocks. */
  escapeCode(text: string): string;
  /** Escapes a URL shown as text (a bare link, or "(url)" after a link the platform cannot make). */
  escapeUrl(text: string): string;
  readonly strong?: Mark;
  readonly emphasis?: Mark;
  readonly strike?: Mark;
  codeSpan(text: string): Mark | undefined;
  heading(depth: HeadingDepth): Mark | undefined;
  /**
   * A link around its text, or undefined when the platform cannot make this one (scheme not
   * allowed, or a bare URL the platform links by itself); then the text is followed by "(url)".
   */
  link(href: string, autolink: boolean): Mark | undefined;
  /** Whether bold/italic/strike may appear inside link text. Code never does. */
  readonly marksInsideLinks: boolean;
  /** `linePrefix`: what starts each line here (quote markers, list indentation). */
  codeBlock(lang: string | undefined, linePrefix: string): { mark: Mark | undefined; newline: string };
  /**
   * A blockquote at nesting `depth` (1 = outermost), inside lines that start with `linePrefix`
   * (non-empty in a list item). The returned `linePrefix` starts every line inside it; a
   * non-empty one also keeps paragraphs inside the quote on adjacent lines, since a blank line
   * would end it.
   */
  quote(depth: number, linePrefix: string): { mark: Mark | undefined; linePrefix: string };
  readonly bullet: string;
  readonly rule: string;
}

/** Schemes every platform accepts as a link target. */
export function hasWebScheme(href: string): boolean {
  return /^https?:\/\/\S+$/i.test(href);
}

/**
 * Quotes written as "> " line prefixes: only an outermost quote that starts a line can be one (a
 * quote in a list item would show a stray ">"), so others are shown as their content.
 */
export function prefixQuote(
  depth: number,
  linePrefix: string,
): { mark: Mark | undefined; linePrefix: string } {
  return depth === 1 && linePrefix === ""
    ? { mark: { open: "> ", close: "" }, linePrefix: "> " }
    : { mark: undefined, linePrefix: "" };
}

/** Drawn for a thematic break (`---`); no platform has a rule element in messages. */
export const RULE_TEXT = "──────────";
