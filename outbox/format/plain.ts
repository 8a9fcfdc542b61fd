import { identity } from "./atoms.ts";
import { type Dialect, prefixQuote, RULE_TEXT } from "./dialect.ts";

/**
 * Plain text for when a platform rejects formatting: no markup, links as "text (url)", bare URLs
 * as themselves, code as its text, quotes kept readable with a "> " prefix, "• " bullets.
 */
export const plainDialect: Dialect = {
  escapeText: identity,
  escapeCode: identity,
  escapeUrl: identity,
  codeSpan: () => undefined,
  heading: () => undefined,
  link: () => undefined,
  marksInsideLinks: false,
  codeBlock: (_lang, linePrefix) => ({ mark: undefined, newline: `\n${linePrefix}` }),
  quote: prefixQuote,
  bullet: "• ",
  rule: RULE_TEXT,
};
