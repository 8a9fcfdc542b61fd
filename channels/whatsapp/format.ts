/**
 * WhatsApp's markup as an outbox/format dialect: *bold*, _italic_, ~strike~, `code`, ``` blocks,
 * "> " quotes, "- " bullets and "1. " numbers. WhatsApp has no link syntax (it links bare URLs by
 * itself), so a link is written as "text (url)", and no escape character, so `*`, `_` and `~`
 * written literally stay as written (WhatsApp formats them only around a word, as Slack does).
 *
 * Written against outbox/format's `Dialect` interface by shape: channels/ may not import outbox/.
 * test/channels/whatsapp/format.test.ts checks that it is one and renders with it. To use it, add
 * `"whatsapp-markdown"` to MARKUP_DIALECTS (channels/types.ts) and `"whatsapp-markdown":
 * whatsappDialect` to DIALECTS (outbox/format/render.ts).
 */

interface Mark {
  readonly open: string;
  readonly close: string;
}

/** Longest text message WhatsApp takes, in characters. */
export const WHATSAPP_MAX_MESSAGE_CHARS = 4096;

/** Drawn for a thematic break; the same as the other dialects (outbox/format/dialect.ts RULE_TEXT). */
const RULE_TEXT = "──────────";

const identity = (text: string): string => text;

/** A fence inside code would end the block early; a zero-width space breaks it up. */
function escapeCode(text: string): string {
  return text.replace(/```/g, "``\u200b`");
}

export const whatsappDialect = {
  escapeText: identity,
  escapeCode,
  escapeUrl: identity,
  strong: { open: "*", close: "*" } as Mark,
  emphasis: { open: "_", close: "_" } as Mark,
  strike: { open: "~", close: "~" } as Mark,
  // A backtick cannot be escaped inside inline code, so such a span is shown as plain text.
  codeSpan: (text: string): Mark | undefined => (text.includes("`") ? undefined : { open: "`", close: "`" }),
  heading: (_depth: number): Mark | undefined => ({ open: "*", close: "*" }),
  link: (_href: string, _autolink: boolean): Mark | undefined => undefined,
  marksInsideLinks: false,
  codeBlock(_lang: string | undefined, linePrefix: string): { mark: Mark | undefined; newline: string } {
    const newline = `\n${linePrefix}`;
    return { mark: { open: `\`\`\`${newline}`, close: `${newline}\`\`\`` }, newline };
  },
  /** "> " quotes exist only at the outermost level and outside lists; deeper ones show their content. */
  quote(depth: number, linePrefix: string): { mark: Mark | undefined; linePrefix: string } {
    return depth === 1 && linePrefix === ""
      ? { mark: { open: "> ", close: "" }, linePrefix: "> " }
      : { mark: undefined, linePrefix: "" };
  },
  bullet: "- ",
  rule: RULE_TEXT,
};
