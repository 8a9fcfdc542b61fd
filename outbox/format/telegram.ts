import { type Atom, type Mark, textAtom } from "./atoms.ts";
import { type Dialect, hasWebScheme, RULE_TEXT } from "./dialect.ts";

/** Escapes text for Telegram's HTML parse mode, which needs only these three outside attributes. */
export function escapeTelegramHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

function escapeAttribute(text: string): string {
  return escapeTelegramHtml(text).replace(/"/g, "&quot;");
}

const tag = (name: string): Mark => ({ open: `<${name}>`, close: `</${name}>` });
const BOLD = tag("b");

/**
 * Telegram HTML parse mode: only b, i, s, code, pre, a and blockquote are produced (u and
 * tg-spoiler have no Markdown source). Blockquotes cannot nest in Telegram and nothing may sit
 * inside code, so inner quotes are flattened and code spans inside links lose their code style.
 */
export const telegramDialect: Dialect = {
  escapeText: (text) => escapeTelegramHtml(text),
  escapeCode: escapeTelegramHtml,
  escapeUrl: escapeTelegramHtml,
  strong: BOLD,
  emphasis: tag("i"),
  strike: tag("s"),
  codeSpan: () => tag("code"),
  heading: () => BOLD,
  link(href, autolink) {
    // Telegram links bare URLs by itself; `tg://` reaches users and chats.
    if (autolink || !(hasWebScheme(href) || /^tg:\/\/\S+$/i.test(href))) return undefined;
    return { open: `<a href="${escapeAttribute(href)}">`, close: "</a>", fallback: urlAfterText(href) };
  },
  marksInsideLinks: true,
  codeBlock(lang) {
    const mark: Mark =
      lang === undefined
        ? { open: "<pre>", close: "</pre>" }
        : { open: `<pre><code class="language-${escapeAttribute(lang)}">`, close: "</code></pre>" };
    return { mark, newline: "\n" };
  },
  quote: (depth) => ({ mark: depth === 1 ? tag("blockquote") : undefined, linePrefix: "" }),
  bullet: "• ",
  rule: RULE_TEXT,
};

function urlAfterText(href: string): Atom[] {
  return [{ kind: "gap", level: "word", rendered: " " }, textAtom(`(${href})`, escapeTelegramHtml)];
}
