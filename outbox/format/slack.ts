import { type Atom, textAtom } from "./atoms.ts";
import { type Dialect, hasWebScheme, prefixQuote, RULE_TEXT } from "./dialect.ts";

/** Slack mrkdwn reserves only these three; `*`, `_` and `~` have no escape in Slack. */
export function escapeSlack(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

/** `|` ends the address inside `<url|text>`, so it is percent-encoded, as are spaces. */
function slackUrl(href: string): string {
  return escapeSlack(href.replace(/[|\s]/g, (char) => encodeURIComponent(char)));
}

/**
 * Slack mrkdwn: *bold*, _italic_, ~strike~, `code`, ``` blocks (no language), <url|text> links
 * whose text cannot be styled, "> " quotes on every line (no nesting), "• " bullets.
 */
export const slackDialect: Dialect = {
  escapeText: (text) => escapeSlack(text),
  escapeCode: (text) => escapeSlack(text.replace(/```/g, "``\u200b`")),
  escapeUrl: escapeSlack,
  strong: { open: "*", close: "*" },
  emphasis: { open: "_", close: "_" },
  strike: { open: "~", close: "~" },
  // A backtick cannot be escaped inside Slack code, so such a span is shown as plain text.
  codeSpan: (text) => (text.includes("`") ? undefined : { open: "`", close: "`" }),
  heading: () => ({ open: "*", close: "*" }),
  link(href, autolink) {
    if (!hasWebScheme(href) && !/^mailto:\S+$/i.test(href)) return undefined;
    return { open: `<${slackUrl(href)}|`, close: ">", ...(autolink ? {} : { fallback: urlAfterText(href) }) };
  },
  marksInsideLinks: false,
  codeBlock(_lang, linePrefix) {
    const newline = `\n${linePrefix}`;
    return { mark: { open: `\`\`\`${newline}`, close: `${newline}\`\`\`` }, newline };
  },
  quote: prefixQuote,
  bullet: "• ",
  rule: RULE_TEXT,
};

function urlAfterText(href: string): Atom[] {
  return [{ kind: "gap", level: "word", rendered: " " }, textAtom(`(${href})`, escapeSlack)];
}
