/**
 * Validates text sent with `parse_mode: "HTML"` the way the Bot API does (modelled on tdlib's
 * parse_html): only the documented tags, balanced; a stray `&` is kept literally, a stray `<` is
 * an error. Returns the visible text, whose length is what the 4096-character limit counts.
 */

const SUPPORTED_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "span",
  "tg-spoiler",
  "a",
  "tg-emoji",
  "tg-time",
  "code",
  "pre",
  "blockquote",
]);

const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

export type HtmlParseResult = { ok: true; visibleText: string } | { ok: false; description: string };

export function parseTelegramHtml(text: string): HtmlParseResult {
  const open: string[] = [];
  let visible = "";
  let i = 0;
  const fail = (reason: string): HtmlParseResult => ({
    ok: false,
    description: `Bad Request: can't parse entities: ${reason}`,
  });
  const byteOffset = (index: number) => Buffer.byteLength(text.slice(0, index));

  while (i < text.length) {
    const ch = text[i];
    if (ch === "&") {
      const decoded = decodeEntity(text, i);
      if (decoded) {
        visible += decoded.char;
        i = decoded.end;
      } else {
        visible += "&";
        i += 1;
      }
      continue;
    }
    if (ch !== "<") {
      visible += ch;
      i += 1;
      continue;
    }
    const close = text.indexOf(">", i);
    if (close === -1) return fail(`Unclosed start tag at byte offset ${byteOffset(i)}`);
    const inner = text.slice(i + 1, close);
    if (inner.startsWith("/")) {
      const name = inner.slice(1).trim().toLowerCase();
      const expected = open.pop();
      if (expected === undefined) return fail(`Unexpected end tag at byte offset ${byteOffset(i)}`);
      if (name !== expected) {
        return fail(
          `Unmatched end tag at byte offset ${byteOffset(i)}, expected "</${expected}>", found "</${name}>"`,
        );
      }
    } else {
      const name = (inner.match(/^[^\s/]*/)?.[0] ?? "").toLowerCase();
      if (!SUPPORTED_TAGS.has(name)) {
        return fail(`Unsupported start tag "${name}" at byte offset ${byteOffset(i)}`);
      }
      if (name === "a" && !/\bhref\s*=/.test(inner)) {
        return fail(`Tag "a" must have attribute "href" at byte offset ${byteOffset(i)}`);
      }
      open.push(name);
    }
    i = close + 1;
  }
  const unclosed = open.pop();
  if (unclosed !== undefined) return fail(`Can't find end tag corresponding to start tag "${unclosed}"`);
  return { ok: true, visibleText: visible };
}

function decodeEntity(text: string, at: number): { char: string; end: number } | null {
  const match = /^&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/i.exec(text.slice(at, at + 12));
  if (!match?.[1]) return null;
  const body = match[1];
  const end = at + match[0].length;
  if (body.startsWith("#x") || body.startsWith("#X")) {
    return { char: String.fromCodePoint(Number.parseInt(body.slice(2), 16)), end };
  }
  if (body.startsWith("#")) return { char: String.fromCodePoint(Number.parseInt(body.slice(1), 10)), end };
  const named = NAMED_ENTITIES[body.toLowerCase()];
  return named === undefined ? null : { char: named, end };
}
