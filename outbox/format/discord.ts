import { type Atom, identity, type Mark, textAtom } from "./atoms.ts";
import { type Dialect, hasWebScheme, prefixQuote, RULE_TEXT } from "./dialect.ts";
import type { HeadingDepth } from "./document.ts";

/**
 * Backslash-escapes what Discord would read as markup: inline delimiters anywhere, block
 * markers (`#`, `>`, `-`, `+`, `1.`) only at the start of a line.
 */
export function escapeDiscord(text: string, lineStart: boolean): string {
  const escaped = text.replace(/[\\*_~`|[\]]/g, "\\$&");
  if (!lineStart) return escaped;
  return escaped.replace(/^[#>+-]/, "\\$&").replace(/^(\d+)([.)])$/, "$1\\$2");
}

/** A fence inside code would end the block early; a zero-width space breaks it up. */
function escapeDiscordCode(text: string): string {
  return text.replace(/```/g, "``\u200b`");
}

/** Masked link targets end at `)` or whitespace. */
function discordUrl(href: string): string {
  return href.replace(
    /[\s()<>]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
}

const BOLD: Mark = { open: "**", close: "**" };

function heading(depth: HeadingDepth): Mark {
  // Discord draws only three heading levels.
  return depth <= 3 ? { open: `${"#".repeat(depth)} `, close: "" } : BOLD;
}

/**
 * Discord Markdown: CommonMark-like with # to ### headings, masked links for http(s) only, bare
 * URLs left for Discord to link, "> " quotes on every line (no nesting), fences kept as fences.
 */
export const discordDialect: Dialect = {
  escapeText: escapeDiscord,
  escapeCode: escapeDiscordCode,
  escapeUrl: identity,
  strong: BOLD,
  emphasis: { open: "*", close: "*" },
  strike: { open: "~~", close: "~~" },
  codeSpan: (text) => (text.includes("`") ? { open: "`` ", close: " ``" } : { open: "`", close: "`" }),
  heading,
  link(href, autolink) {
    if (autolink || !hasWebScheme(href)) return undefined;
    return { open: "[", close: `](${discordUrl(href)})`, fallback: urlAfterText(href) };
  },
  marksInsideLinks: true,
  codeBlock(lang, linePrefix) {
    const newline = `\n${linePrefix}`;
    return { mark: { open: `\`\`\`${lang ?? ""}${newline}`, close: `${newline}\`\`\`` }, newline };
  },
  quote: prefixQuote,
  bullet: "- ",
  rule: RULE_TEXT,
};

function urlAfterText(href: string): Atom[] {
  return [{ kind: "gap", level: "word", rendered: " " }, textAtom(`(${href})`)];
}
