/**
 * A rendered message as a stream of atoms: markup that opens and closes, unbreakable runs of text,
 * and gaps where a message may be cut. Renderers produce atoms; the chunker cuts them into
 * messages, closing every open mark at a cut and reopening it in the next message.
 */

/** Where a cut may fall, strongest first: between blocks, between lines, between words. */
export type GapLevel = "paragraph" | "line" | "word";

/** A piece of markup that wraps content: a tag pair, a Markdown delimiter pair, a quote prefix. */
export interface Mark {
  /** Rendered markup that opens the mark; repeated at the start of a message that continues it. */
  readonly open: string;
  /** Rendered markup that closes the mark; also added at the end of a message cut inside it. */
  readonly close: string;
  /**
   * What to show after the content when the mark cannot be kept because its markup alone would
   * take more than half a message (a link whose address is that long): e.g. " (url)".
   */
  readonly fallback?: readonly Atom[];
}

export interface TextAtom {
  readonly kind: "text";
  /** Source text, split only when it alone exceeds a message. */
  readonly text: string;
  /** Renders (a part of) `text`; applied per part, so an escape like `&amp;` is never cut. */
  readonly escape: (text: string) => string;
  /**
   * Renders it when a cut puts it first in a message, where a platform may read block syntax
   * (`> `, `# `, `- `) that mid-line was plain text.
   */
  readonly escapeAtLineStart?: (text: string) => string;
}

export type Atom =
  | { readonly kind: "open"; readonly mark: Mark }
  | { readonly kind: "close"; readonly mark: Mark }
  | TextAtom
  /** Whitespace between content; dropped when a message is cut here. */
  | { readonly kind: "gap"; readonly level: GapLevel; readonly rendered: string };

export const identity = (text: string): string => text;

export function textAtom(
  text: string,
  render: (text: string) => string = identity,
  renderAtLineStart?: (text: string) => string,
): TextAtom {
  return renderAtLineStart === undefined
    ? { kind: "text", text, escape: render }
    : { kind: "text", text, escape: render, escapeAtLineStart: renderAtLineStart };
}
