/**
 * Matrix's markup: `formatted_body` in `org.matrix.custom.html`, beside a plain `body`.
 *
 * `matrixDialect` is an outbox/format dialect written against its `Dialect` interface by shape
 * (channels/ may not import outbox/); `"matrix-html"` in MARKUP_DIALECTS and DIALECTS
 * (outbox/format/render.ts) name it. It writes only tags of the spec's allowed subset: strong,
 * em, del, code, pre, a, blockquote. `toMatrixContent` turns one rendered chunk into the event's
 * `body` and `formatted_body`: line breaks become `<br>` outside `<pre>` (HTML collapses them),
 * and whatever is not in the allowed subset is escaped, never passed on.
 */

interface Mark {
  readonly open: string;
  readonly close: string;
}

/** Drawn for a thematic break; the same as the other dialects (outbox/format/dialect.ts RULE_TEXT). */
const RULE_TEXT = "──────────";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;");
}

const tag = (name: string): Mark => ({ open: `<${name}>`, close: `</${name}>` });

export const matrixDialect = {
  escapeText: (text: string, _lineStart: boolean): string => escapeHtml(text),
  escapeCode: escapeHtml,
  escapeUrl: escapeHtml,
  strong: tag("strong"),
  emphasis: tag("em"),
  strike: tag("del"),
  codeSpan: (_text: string): Mark | undefined => tag("code"),
  heading: (_depth: number): Mark | undefined => tag("strong"),
  /** Clients link bare URLs themselves; other links keep their text with an http(s) target. */
  link(href: string, autolink: boolean): Mark | undefined {
    if (autolink || !/^https?:\/\/\S+$/i.test(href)) return undefined;
    return { open: `<a href="${escapeAttribute(href)}">`, close: "</a>" };
  },
  marksInsideLinks: true,
  codeBlock(lang: string | undefined, _linePrefix: string): { mark: Mark | undefined; newline: string } {
    const mark: Mark =
      lang === undefined || !/^[A-Za-z0-9_+-]{1,40}$/.test(lang)
        ? { open: "<pre><code>", close: "</code></pre>" }
        : { open: `<pre><code class="language-${lang}">`, close: "</code></pre>" };
    return { mark, newline: "\n" };
  },
  quote(_depth: number, _linePrefix: string): { mark: Mark | undefined; linePrefix: string } {
    return { mark: tag("blockquote"), linePrefix: "" };
  },
  bullet: "• ",
  rule: RULE_TEXT,
};

/** Tags of the spec's allowed subset this channel passes on (client-server API, m.room.message). */
const ALLOWED_TAGS = new Set([
  "strong",
  "b",
  "em",
  "i",
  "u",
  "del",
  "s",
  "code",
  "pre",
  "a",
  "blockquote",
  "br",
  "p",
  "ul",
  "ol",
  "li",
  "span",
  "sub",
  "sup",
  "hr",
]);

const TAG = /<(\/?)([A-Za-z][A-Za-z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*(\/?)>/g;

/**
 * Keeps the allowed tags (links only to http(s) and mailto, code's `language-*` class), escapes
 * every other `<…>` as text.
 */
export function sanitizeMatrixHtml(html: string): string {
  let out = "";
  let last = 0;
  for (const match of html.matchAll(TAG)) {
    const [whole, closing, rawName, attributes] = match;
    const name = rawName!.toLowerCase();
    out += escapeStray(html.slice(last, match.index));
    last = match.index + whole.length;
    if (!ALLOWED_TAGS.has(name)) {
      out += escapeHtml(whole);
      continue;
    }
    if (closing) {
      out += `</${name}>`;
      continue;
    }
    out += `<${name}${allowedAttributes(name, attributes ?? "")}>`;
  }
  return out + escapeStray(html.slice(last));
}

/** `<` and `>` outside tags become text; entities stay as they are. */
function escapeStray(text: string): string {
  return text.replace(/[<>]/g, (char) => (char === "<" ? "&lt;" : "&gt;"));
}

function allowedAttributes(name: string, attributes: string): string {
  const value = (attribute: string) => new RegExp(`\\s${attribute}="([^"]*)"`).exec(attributes)?.[1];
  if (name === "a") {
    const href = value("href");
    return href !== undefined && /^(https?:\/\/|mailto:)/i.test(href) ? ` href="${href}"` : "";
  }
  if (name === "code") {
    const cls = value("class");
    return cls !== undefined && /^language-[A-Za-z0-9_+-]{1,40}$/.test(cls) ? ` class="${cls}"` : "";
  }
  return "";
}

/** Line breaks become `<br>` outside `<pre>` blocks, where HTML would collapse them. */
function breakLines(html: string): string {
  return html
    .split(/(<pre>[\s\S]*?<\/pre>)/)
    .map((part) => (part.startsWith("<pre>") ? part : part.replace(/\n/g, "<br>")))
    .join("");
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };

/** The plain `body` of a chunk rendered in matrix-html: tags dropped, a link's address after its text. */
export function htmlToPlain(html: string): string {
  return html
    .replace(/<a href="([^"]*)">([\s\S]*?)<\/a>/g, (_m, href: string, text: string) =>
      text === href ? text : `${text} (${href})`,
    )
    .replace(/<br>/g, "\n")
    .replace(/<[^>]+>/g, "")
    .replace(/&(amp|lt|gt|quot|#39);/g, (_m, name: string) => ENTITIES[name] ?? "");
}

/** One message's content: `rich` text is matrix-html; `plain` text is sent as it is. */
export function toMatrixContent(
  text: string,
  format: "rich" | "plain",
  msgtype = "m.text",
): { msgtype: string; body: string; format?: string; formatted_body?: string } {
  if (format === "plain") return { msgtype, body: text };
  const html = breakLines(sanitizeMatrixHtml(text));
  return { msgtype, body: htmlToPlain(text), format: "org.matrix.custom.html", formatted_body: html };
}
