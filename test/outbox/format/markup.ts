/**
 * Test-side readers of rendered output: a strict validator for the Telegram HTML subset, checks
 * for Slack and Discord markup, and the visible text of a rendered message, so tests can compare
 * content across chunks without trusting the renderer's own code.
 */

const TELEGRAM_TAGS = new Set(["b", "i", "s", "u", "code", "pre", "a", "blockquote", "tg-spoiler"]);
const TELEGRAM_ENTITY = /^&(?:lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/i;

const MATRIX_TAGS = new Set(["strong", "em", "del", "code", "pre", "a", "blockquote"]);

/**
 * Parses the matrix-html dialect's output; throws on a tag outside what it writes of Matrix's
 * allowed subset, an attribute other than a link's href or code's language class, an unbalanced
 * tag, or a raw "<", ">" or "&". Returns the text.
 */
export function matrixText(html: string): string {
  const open: string[] = [];
  let text = "";
  let index = 0;
  while (index < html.length) {
    const char = html[index]!;
    if (char === "<") {
      const tag = /^<(\/?)([a-z]+)((?:\s+[a-z-]+="[^"<>]*")*)>/.exec(html.slice(index));
      if (tag === null)
        throw new Error(`raw "<" or malformed tag at ${index}: ${html.slice(index, index + 30)}`);
      const [whole, slash, name, attributes] = tag as unknown as [string, string, string, string];
      if (!MATRIX_TAGS.has(name)) throw new Error(`tag <${name}> is not written by matrix-html`);
      if (slash === "/") {
        const top = open.pop();
        if (top !== name) throw new Error(`</${name}> closes <${top ?? "nothing"}>`);
      } else {
        const ok =
          attributes === "" ||
          (name === "a" && /^ href="https?:\/\/[^"]*"$/.test(attributes)) ||
          (name === "code" && /^ class="language-[A-Za-z0-9_+-]+"$/.test(attributes));
        if (!ok) throw new Error(`<${name}${attributes}> has an attribute Matrix clients drop`);
        open.push(name);
      }
      index += whole.length;
    } else if (char === "&") {
      const entity = TELEGRAM_ENTITY.exec(html.slice(index));
      if (entity === null) throw new Error(`"&" that starts no entity at ${index}`);
      text += decodeEntity(entity[0]);
      index += entity[0].length;
    } else if (char === ">") {
      throw new Error(`unescaped ">" at ${index}`);
    } else {
      text += char;
      index += 1;
    }
  }
  if (open.length > 0) throw new Error(`unclosed tags: ${open.join(", ")}`);
  return text;
}

/** Parses Telegram parse_mode HTML; throws on anything Telegram would reject. Returns the text. */
export function telegramText(html: string): string {
  const open: string[] = [];
  let text = "";
  let index = 0;
  while (index < html.length) {
    const char = html[index]!;
    if (char === "<") {
      const tag = /^<(\/?)([a-z-]+)((?:\s+[a-z-]+="[^"<>]*")*)>/.exec(html.slice(index));
      if (tag === null)
        throw new Error(`raw "<" or malformed tag at ${index}: ${html.slice(index, index + 30)}`);
      const [whole, slash, name, attributes] = tag as unknown as [string, string, string, string];
      if (!TELEGRAM_TAGS.has(name)) throw new Error(`tag <${name}> is not allowed by Telegram`);
      if (slash === "/") {
        if (attributes !== "") throw new Error(`closing tag </${name}> has attributes`);
        const top = open.pop();
        if (top !== name) throw new Error(`</${name}> closes <${top ?? "nothing"}>`);
      } else {
        checkTelegramAttributes(name, attributes, open);
        if (open.includes("code") || (open.at(-1) === "pre" && name !== "code")) {
          throw new Error(`<${name}> inside code or pre`);
        }
        if (name === "blockquote" && open.includes("blockquote")) throw new Error("nested <blockquote>");
        if (name === "a" && open.includes("a")) throw new Error("nested <a>");
        open.push(name);
      }
      index += whole.length;
    } else if (char === "&") {
      const entity = TELEGRAM_ENTITY.exec(html.slice(index));
      if (entity === null)
        throw new Error(`"&" that starts no entity at ${index}: ${html.slice(index, index + 12)}`);
      text += decodeEntity(entity[0]);
      index += entity[0].length;
    } else if (char === ">") {
      throw new Error(`unescaped ">" at ${index}`);
    } else {
      text += char;
      index += 1;
    }
  }
  if (open.length > 0) throw new Error(`unclosed tags: ${open.join(", ")}`);
  return text;
}

function checkTelegramAttributes(name: string, attributes: string, open: readonly string[]): void {
  const pairs = [...attributes.matchAll(/([a-z-]+)="([^"]*)"/g)].map(
    (match) => [match[1]!, match[2]!] as const,
  );
  for (const [attribute, value] of pairs) {
    const allowed =
      (name === "a" && attribute === "href") ||
      (name === "code" &&
        attribute === "class" &&
        open.at(-1) === "pre" &&
        /^language-[\w+#.-]+$/.test(value));
    if (!allowed) throw new Error(`attribute ${attribute}="${value}" not allowed on <${name}>`);
    for (const amp of value.matchAll(/&/g)) {
      if (!TELEGRAM_ENTITY.test(value.slice(amp.index))) throw new Error(`unescaped "&" in ${attribute}`);
    }
  }
  if (name === "a" && pairs.length !== 1) throw new Error("<a> needs exactly one href");
}

function decodeEntity(entity: string): string {
  const named: Record<string, string> = { "&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"' };
  if (named[entity.toLowerCase()] !== undefined) return named[entity.toLowerCase()]!;
  const hex = entity.startsWith("&#x") || entity.startsWith("&#X");
  return String.fromCodePoint(Number.parseInt(entity.slice(hex ? 3 : 2, -1), hex ? 16 : 10));
}

/** Throws unless every `&` starts an escape Slack knows and every `<` opens a complete link. */
export function checkSlackMarkup(mrkdwn: string): void {
  for (const amp of mrkdwn.matchAll(/&/g)) {
    if (!/^&(?:amp|lt|gt);/.test(mrkdwn.slice(amp.index))) {
      throw new Error(`"&" that starts no escape at ${amp.index}: ${mrkdwn.slice(amp.index, amp.index + 8)}`);
    }
  }
  const withoutLinks = mrkdwn.replace(/<[^<>\s|]+(?:\|[^<>]*)?>/g, "");
  if (/[<>]/.test(withoutLinks.replace(/^> /gm, "")))
    throw new Error(`raw "<" or ">" outside a link: ${mrkdwn}`);
}

/** Code fences in a message (a fence may follow a list bullet, so not only at line starts). */
export function fenceCount(markdown: string): number {
  return markdown.match(/```/g)?.length ?? 0;
}

/**
 * The content of a rendered message with every markup character and all whitespace removed.
 * Literal `*`, `_` and the like disappear too, on both sides of any comparison.
 */
export function contentOf(
  platform:
    | "telegram-html"
    | "slack-mrkdwn"
    | "discord-markdown"
    | "whatsapp-markdown"
    | "matrix-html"
    | "plain",
  rendered: string,
): string {
  let text: string;
  switch (platform) {
    case "telegram-html":
      text = telegramText(rendered);
      break;
    case "matrix-html":
      text = matrixText(rendered);
      break;
    case "slack-mrkdwn":
      text = rendered
        .replace(/<[^<>|]*\|([^<>]*)>/g, "$1")
        .replace(/```/g, "")
        .replace(/^> /gm, "")
        .replace(/[*_~`]/g, "")
        .replace(/&lt;/g, "<")
        .replace(/&gt;/g, ">")
        .replace(/&amp;/g, "&");
      break;
    case "whatsapp-markdown":
      // No escapes and no link syntax: only the delimiters (and a fence's zero-width break) go.
      // As in plain text, a cut can put a literal ">" first in a message, where it looks like a quote.
      text = rendered
        .replace(/```/g, "")
        .replace(/\u200b/g, "")
        .replace(/[*_~`>]/g, "");
      break;
    case "discord-markdown":
      // Outside code, [label](url) shows only its label; inside code it is text.
      text = rendered
        .split(/```[\w+#.-]*/)
        .map((part, index) =>
          index % 2 === 0 ? part.replace(/(?<!\\)\[((?:\\.|[^\]\\])*)\]\([^)\s]*\)/g, "$1") : part,
        )
        .join("")
        .replace(/[*_~`|\\#>]/g, "");
      break;
    case "plain":
      // A cut can put a literal ">" first in a message, where it looks like a quote prefix.
      text = rendered.replace(/>/g, "");
      break;
  }
  return text.replace(/\s+/g, "").replace(/\u200b/g, "");
}
