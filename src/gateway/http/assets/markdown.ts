/**
 * Markdown for the chat page and the console: marked (CommonMark + GFM: lists, headings, tables,
 * quotes, autolinks, links with parentheses) turns it into HTML, then a sanitiser keeps only an
 * allow-list of elements and attributes. Two layers, so neither alone has to be perfect:
 *
 * 1. `markdownToHtml`: raw HTML in the text is shown as text, links and images keep only http(s)
 *    and mailto targets, images become links (the page loads nothing from elsewhere).
 * 2. `sanitizeHtml`: parses that HTML in an inert <template> and rebuilds it from allowed
 *    elements (attributes checked one by one); anything else leaves only its text.
 */
import { Marked, type Tokens } from "marked";

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** http, https and mailto only; anything else (javascript:, data:, relative paths) is no link. */
export function safeHref(href: string): string | null {
  const trimmed = href.trim();
  return /^(?:https?:\/\/|mailto:)[^\s<>"]+$/i.test(trimmed) ? trimmed : null;
}

const marked = new Marked({
  gfm: true,
  // Chat messages mean their line breaks.
  breaks: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    link(
      this: { parser: { parseInline(tokens: Tokens.Link["tokens"]): string } },
      token: Tokens.Link,
    ): string {
      const text = this.parser.parseInline(token.tokens);
      const href = safeHref(token.href);
      if (href === null) return text;
      return `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${text}</a>`;
    },
    image(token: Tokens.Image): string {
      const href = safeHref(token.href);
      const label = escapeHtml(token.text || token.href);
      return href === null
        ? label
        : `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${label}</a>`;
    },
  },
});

/** Markdown → HTML in which every tag is marked's own and every link target is checked. */
export function markdownToHtml(markdown: string): string {
  return marked.parse(markdown, { async: false });
}

/** Elements kept, each with the attributes it may keep. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  p: [],
  br: [],
  hr: [],
  strong: [],
  em: [],
  del: [],
  code: ["class"],
  pre: [],
  blockquote: [],
  ul: [],
  ol: ["start"],
  li: [],
  h1: [],
  h2: [],
  h3: [],
  h4: [],
  h5: [],
  h6: [],
  table: [],
  thead: [],
  tbody: [],
  tr: [],
  th: ["align"],
  td: ["align"],
  a: ["href"],
};

/** Dropped with their content (their text is not prose). */
const DROPPED = new Set([
  "script",
  "style",
  "template",
  "iframe",
  "object",
  "embed",
  "svg",
  "math",
  "noscript",
]);

const ATTRIBUTE_VALUE: Readonly<Record<string, RegExp>> = {
  class: /^language-[\w+-]{1,40}$/,
  start: /^\d{1,9}$/,
  align: /^(?:left|right|center)$/,
};

/** A fragment holding only allowed elements and attributes, built in `doc` (the page's document). */
export function sanitizeHtml(html: string, doc: Document): DocumentFragment {
  const template = doc.createElement("template");
  template.innerHTML = html;
  const out = doc.createDocumentFragment();
  copyChildren(template.content, out, doc);
  return out;
}

function copyChildren(from: Node, to: Node, doc: Document): void {
  for (const child of Array.from(from.childNodes)) {
    if (child.nodeType === Node.TEXT_NODE) {
      to.appendChild(doc.createTextNode(child.textContent ?? ""));
      continue;
    }
    if (child.nodeType !== Node.ELEMENT_NODE) continue;
    const element = child as Element;
    const tag = element.localName;
    if (DROPPED.has(tag) || element.namespaceURI !== "http://www.w3.org/1999/xhtml") continue;
    const allowed = ALLOWED[tag];
    if (allowed === undefined) {
      copyChildren(element, to, doc);
      continue;
    }
    const copy = doc.createElement(tag);
    for (const name of allowed) {
      const value = element.getAttribute(name);
      if (value === null) continue;
      if (name === "href") {
        const href = safeHref(value);
        if (href === null) continue;
        copy.setAttribute("href", href);
        copy.setAttribute("target", "_blank");
        copy.setAttribute("rel", "noopener noreferrer");
      } else if (ATTRIBUTE_VALUE[name]?.test(value)) {
        copy.setAttribute(name, value);
      }
    }
    copyChildren(element, copy, doc);
    to.appendChild(copy);
  }
}

/** Shows `markdown` as the content of `element`. */
export function renderMarkdown(element: HTMLElement, markdown: string): void {
  element.replaceChildren(sanitizeHtml(markdownToHtml(markdown), element.ownerDocument));
}
