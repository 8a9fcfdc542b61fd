/**
 * The Markdown subset switchboard renders, normalised from the parser's tokens. Renderers walk
 * this tree and never see the parser, so swapping the parser touches only parse.ts.
 */

export type Inline =
  | { type: "text"; text: string }
  | { type: "strong" | "emphasis" | "strike"; children: Inline[] }
  | { type: "code"; text: string }
  /** `autolink`: a bare URL or `<url>` whose visible text is the address itself. */
  | { type: "link"; href: string; autolink: boolean; children: Inline[] }
  | { type: "break" };

export type HeadingDepth = 1 | 2 | 3 | 4 | 5 | 6;

export type TaskState = "none" | "open" | "done";

export interface ListItem {
  task: TaskState;
  children: Block[];
}

export type Block =
  | { type: "paragraph"; children: Inline[] }
  | { type: "heading"; depth: HeadingDepth; children: Inline[] }
  /** `lang` is undefined when the fence names none. */
  | { type: "code"; lang: string | undefined; text: string }
  /** `loose`: items are separated by blank lines in the source. */
  | { type: "list"; ordered: boolean; start: number; loose: boolean; items: ListItem[] }
  | { type: "quote"; children: Block[] }
  | { type: "rule" }
  /** Cells as plain text; no chat platform draws tables, so they are laid out as monospace. */
  | { type: "table"; header: string[]; rows: string[][] };

/** The visible text of inline content, without any markup. */
export function inlineText(inlines: readonly Inline[]): string {
  let text = "";
  for (const inline of inlines) {
    switch (inline.type) {
      case "text":
      case "code":
        text += inline.text;
        break;
      case "break":
        text += "\n";
        break;
      default:
        text += inlineText(inline.children);
    }
  }
  return text;
}
