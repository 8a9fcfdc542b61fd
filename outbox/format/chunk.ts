import { SwitchboardError } from "../../src/errors.ts";
import type { Atom, GapLevel, Mark, TextAtom } from "./atoms.ts";

/** The smallest limit accepted: room for nested markup plus some text in every message. */
export const MIN_MAX_CHARS = 32;

const GAP_RANK: Readonly<Record<GapLevel, number>> = { paragraph: 3, line: 2, word: 1 };

/**
 * Cuts rendered atoms into messages of at most `maxChars` UTF-16 code units each (what
 * `String.length` counts; never less than what the platforms count).
 *
 * Guarantees, per message: every mark open in it is closed at its end and reopened at the start
 * of the next one (tags, code fences, quote prefixes), so each message stands on its own; an
 * escape is never split; a cut falls in a gap (the whitespace there is dropped), preferring a
 * paragraph, then a line, then a word gap among cuts that leave the message at least half full;
 * a word is split only when no gap is left in the message, at a grapheme boundary.
 * Returns no messages when there is no text.
 */
export function chunkAtoms(atoms: readonly Atom[], maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < MIN_MAX_CHARS) {
    throw new SwitchboardError(
      "input_invalid",
      `maxChars must be an integer of at least ${MIN_MAX_CHARS}, got ${maxChars}; pass the platform's message limit (e.g. ChannelLimits.maxMessageChars).`,
      { details: { maxChars } },
    );
  }
  const chunker = new Chunker(maxChars);
  chunker.run(keepMarksThatFit(atoms, maxChars));
  return chunker.chunks;
}

/**
 * Drops marks whose markup, with that of the marks around them, would take more than half a
 * message (a link to a very long URL), showing their fallback instead. What is kept leaves every
 * message at least half its room for text, so chunking always makes progress.
 */
function keepMarksThatFit(atoms: readonly Atom[], maxChars: number): Atom[] {
  const kept: Atom[] = [];
  const open: { mark: Mark; kept: boolean }[] = [];
  let overheadChars = 0;
  for (const atom of atoms) {
    if (atom.kind === "open") {
      const markChars = atom.mark.open.length + atom.mark.close.length;
      const fits = overheadChars + markChars <= maxChars / 2;
      open.push({ mark: atom.mark, kept: fits });
      if (fits) {
        overheadChars += markChars;
        kept.push(atom);
      }
    } else if (atom.kind === "close") {
      const top = open.pop();
      if (top?.mark !== atom.mark) throw new Error("chunkAtoms: a close atom does not match the open mark");
      if (top.kept) {
        overheadChars -= atom.mark.open.length + atom.mark.close.length;
        kept.push(atom);
      } else {
        kept.push(...(atom.mark.fallback ?? []));
      }
    } else {
      kept.push(atom);
    }
  }
  if (open.length > 0) throw new Error("chunkAtoms: a mark is opened and never closed");
  return kept;
}

interface Entry {
  readonly atom: Atom;
  readonly rendered: string;
  /** Marks open after this atom, outermost first. */
  readonly stack: readonly Mark[];
}

class Chunker {
  readonly chunks: string[] = [];
  /** Marks still open from the previous message, reopened at the start of this one. */
  private startStack: readonly Mark[] = [];
  private entries: Entry[] = [];
  /** Rendered length of the reopened marks plus the entries. */
  private length = 0;
  /** Whether the message shows any non-whitespace text yet. */
  private hasText = false;
  /** Atoms still to place, the next one last. */
  private pending: Atom[] = [];
  private readonly segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });

  constructor(private readonly maxChars: number) {}

  run(atoms: readonly Atom[]): void {
    this.pending = [...atoms].reverse();
    for (let atom = this.pending.pop(); atom !== undefined; atom = this.pending.pop()) this.place(atom);
    this.flush();
  }

  private get stack(): readonly Mark[] {
    return this.entries.at(-1)?.stack ?? this.startStack;
  }

  private place(atom: Atom): void {
    if (atom.kind === "gap" && !this.hasText) return;
    if (atom.kind === "close" && this.closesEmpty(atom.mark)) return;
    const stack = stackAfter(this.stack, atom);
    const rendered = atom.kind === "text" ? this.textEscape(atom)(atom.text) : render(atom);
    if (this.length + rendered.length + closingLength(stack) <= this.maxChars) {
      this.append({ atom, rendered, stack });
      return;
    }
    if (
      atom.kind === "text" &&
      openingLength(stack) + rendered.length + closingLength(stack) > this.maxChars
    ) {
      // It needs splitting wherever it starts, so it may as well fill this message first.
      this.splitText(atom);
      return;
    }
    if (atom.kind === "gap") {
      // Too long to keep, but a cut here drops it: offer it as a candidate like any other gap.
      this.append({ atom, rendered: "", stack });
    }
    const cut = this.bestCut();
    if (cut !== undefined) {
      const rest = this.entries.slice(cut + 1).map((entry) => entry.atom);
      this.requeue(atom.kind === "gap" ? rest : [...rest, atom]);
      this.entries = this.entries.slice(0, cut);
      this.hasText = this.entries.some((entry) => isVisible(entry.atom));
      this.flush();
    } else if (atom.kind === "text") {
      this.splitText(atom);
    } else {
      this.requeue([atom]);
      this.flush();
    }
  }

  /** An element closed with nothing inside is not written at all. */
  private closesEmpty(mark: Mark): boolean {
    const last = this.entries.at(-1);
    if (last?.atom.kind === "open" && last.atom.mark === mark) {
      this.entries.pop();
      this.length -= last.rendered.length;
      return true;
    }
    if (this.entries.length === 0 && this.startStack.at(-1) === mark) {
      this.startStack = this.startStack.slice(0, -1);
      this.length -= mark.open.length;
      return true;
    }
    return false;
  }

  /** The gap to cut at: among those after some text, prefer ones leaving the message half full, then the strongest, then the latest. */
  private bestCut(): number | undefined {
    let best: { index: number; score: number } | undefined;
    let lengthBefore = openingLength(this.startStack);
    let seenText = false;
    this.entries.forEach((entry, index) => {
      if (entry.atom.kind === "gap" && seenText) {
        const stackBefore = this.entries[index - 1]?.stack ?? this.startStack;
        const full = lengthBefore + closingLength(stackBefore) >= this.maxChars / 2 ? 10 : 0;
        const score = full + GAP_RANK[entry.atom.level];
        if (best === undefined || score >= best.score) best = { index, score };
      }
      if (isVisible(entry.atom)) seenText = true;
      lengthBefore += entry.rendered.length;
    });
    return best?.index;
  }

  /** Fills the message with as much of an over-long word as fits, then continues in the next. */
  private splitText(atom: TextAtom): void {
    const room = this.maxChars - this.length - closingLength(this.stack);
    const render = this.textEscape(atom);
    let head = fittingPrefix(render, this.leadingGraphemes(atom.text, room), room);
    // Nothing fits after what is here: end the message (one of only whitespace is dropped).
    if (head === "" && this.entries.some((entry) => entry.atom.kind === "text")) {
      this.requeue([atom]);
      this.flush();
      return;
    }
    // A lone grapheme bigger than an empty message (a pile of combining marks) is split by code point.
    if (head === "") head = fittingPrefix(render, Array.from(atom.text.slice(0, room + 1)), room);
    if (head === "") throw new Error("chunkAtoms: not even one character fits in an empty message");
    this.append({ atom: { ...atom, text: head }, rendered: render(head), stack: this.stack });
    this.requeue([{ ...atom, text: atom.text.slice(head.length) }]);
    this.flush();
  }

  /** A text first in its message is escaped as at the start of a line. */
  private textEscape(atom: TextAtom): (text: string) => string {
    return (!this.hasText && atom.escapeAtLineStart) || atom.escape;
  }

  /**
   * The graphemes that could fit in `room` (escapes only lengthen text), without segmenting the
   * rest of a very long word each time. The last one is dropped when the window cut it short.
   */
  private leadingGraphemes(text: string, room: number): string[] {
    const window = text.slice(0, room + 64);
    const graphemes = Array.from(this.segmenter.segment(window), (segment) => segment.segment);
    if (window.length < text.length) graphemes.pop();
    return graphemes;
  }

  private append(entry: Entry): void {
    this.entries.push(entry);
    this.length += entry.rendered.length;
    if (isVisible(entry.atom)) this.hasText = true;
  }

  private requeue(atoms: readonly Atom[]): void {
    for (let index = atoms.length - 1; index >= 0; index -= 1) this.pending.push(atoms[index]!);
  }

  /** Ends the current message: trailing gaps are dropped, trailing opens move to the next message. */
  private flush(): void {
    const moved: Atom[] = [];
    for (let last = this.entries.at(-1); last !== undefined; last = this.entries.at(-1)) {
      if (last.atom.kind === "gap") this.entries.pop();
      else if (last.atom.kind === "open") moved.unshift(this.entries.pop()!.atom);
      else break;
    }
    const stack = this.stack;
    if (this.hasText) {
      const body = this.entries.map((entry) => entry.rendered).join("");
      const chunk = opening(this.startStack) + body + closing(stack);
      if (chunk.length > this.maxChars) throw new Error("chunkAtoms: a message exceeds maxChars");
      this.chunks.push(chunk);
    }
    this.startStack = stack;
    this.entries = [];
    this.hasText = false;
    this.length = openingLength(stack);
    this.requeue(moved);
  }
}

/** The longest run of whole `parts` from the start whose rendering fits in `room`. */
function fittingPrefix(render: (text: string) => string, parts: readonly string[], room: number): string {
  const taken: string[] = [];
  let estimatedChars = 0;
  for (const part of parts) {
    estimatedChars += render(part).length;
    if (estimatedChars > room) break;
    taken.push(part);
  }
  // Escapes that look at neighbours (a code fence broken up) can render longer than the parts did.
  while (taken.length > 0 && render(taken.join("")).length > room) taken.pop();
  return taken.join("");
}

/** Text that shows something; a message of only whitespace is not sent (platforms reject it). */
function isVisible(atom: Atom): boolean {
  return atom.kind === "text" && /\S/.test(atom.text);
}

function stackAfter(stack: readonly Mark[], atom: Atom): readonly Mark[] {
  if (atom.kind === "open") return [...stack, atom.mark];
  if (atom.kind === "close") return stack.slice(0, -1);
  return stack;
}

function render(atom: Atom): string {
  switch (atom.kind) {
    case "open":
      return atom.mark.open;
    case "close":
      return atom.mark.close;
    case "text":
      return atom.escape(atom.text);
    case "gap":
      return atom.rendered;
  }
}

function opening(stack: readonly Mark[]): string {
  return stack.map((mark) => mark.open).join("");
}

function closing(stack: readonly Mark[]): string {
  return stack
    .map((mark) => mark.close)
    .reverse()
    .join("");
}

function openingLength(stack: readonly Mark[]): number {
  return stack.reduce((sum, mark) => sum + mark.open.length, 0);
}

function closingLength(stack: readonly Mark[]): number {
  return stack.reduce((sum, mark) => sum + mark.close.length, 0);
}
