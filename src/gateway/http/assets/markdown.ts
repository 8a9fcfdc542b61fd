/**
 * A safe Markdown subset for the browser: everything is HTML-escaped first, then fenced and inline
 * code, links (http, https, mailto only; rel="noopener noreferrer"), bold and italic are applied
 * to the escaped text. Nothing the model writes can become markup of its own.
 */

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

/** Renders `markdown` to an HTML string that is safe to assign to innerHTML. */
export function renderMarkdown(markdown: string): string {
  const html: string[] = [];
  // An unclosed fence (a reply still streaming) is shown as code up to the end.
  const fence = /```([^\n`]*)\n?([\s\S]*?)(?:```|$)/g;
  let last = 0;
  for (let match = fence.exec(markdown); match !== null; match = fence.exec(markdown)) {
    html.push(renderBlocks(markdown.slice(last, match.index)));
    html.push(`<pre><code>${escapeHtml(match[2] ?? "")}</code></pre>`);
    last = fence.lastIndex;
  }
  html.push(renderBlocks(markdown.slice(last)));
  return html.join("");
}

function renderBlocks(text: string): string {
  return text
    .split(/\n{2,}/)
    .map((block) => block.trim())
    .filter((block) => block !== "")
    .map((block) => `<p>${renderInline(block)}</p>`)
    .join("");
}

function renderInline(text: string): string {
  const codeSpans: string[] = [];
  // Code spans are set aside first so nothing inside them is formatted.
  let html = escapeHtml(text).replace(/`([^`\n]+)`/g, (_all, code: string) => {
    codeSpans.push(`<code>${code}</code>`);
    return `\uE000${codeSpans.length - 1}\uE001`;
  });
  html = html
    .replace(
      /\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/g,
      '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>',
    )
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>")
    .replace(/\n/g, "<br>");
  return html.replace(/\uE000(\d+)\uE001/g, (_all, index: string) => codeSpans[Number(index)] ?? "");
}
