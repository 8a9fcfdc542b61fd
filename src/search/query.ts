/**
 * History search queries: parsed here into words and phrases, then rendered for each engine from
 * that structure only (FTS5 MATCH, PostgreSQL tsquery). The user's text never reaches MATCH or
 * to_tsquery as is, so no operator, quote or column filter in it can do anything but be a word.
 */

export const MAX_QUERY_CHARS = 256;
export const MAX_QUERY_TERMS = 12;
export const MAX_TERM_CHARS = 64;

/** One term: a word, or a phrase of words that must follow each other; `prefix` matches word starts. */
export interface SearchTerm {
  words: string[];
  prefix: boolean;
}

export interface SearchQuery {
  terms: SearchTerm[];
}

export type QueryParse = { ok: true; query: SearchQuery } | { ok: false; error: string };

const WORD = /[\p{L}\p{N}]+/gu;
const EXAMPLE = 'e.g. invoice march, "exact phrase", or deploy*';

/**
 * `word word "a phrase" prefix*`: every term must match (AND). Anything that is not a letter or a
 * digit separates words; a term ending in `*` matches words that start with it.
 */
export function parseSearchQuery(text: string): QueryParse {
  if (text.length > MAX_QUERY_CHARS) {
    return { ok: false, error: `The query is ${text.length} characters; at most ${MAX_QUERY_CHARS}.` };
  }
  if ((text.match(/"/g) ?? []).length % 2 === 1) {
    return {
      ok: false,
      error: `The query has an unclosed quote. Close it, or leave quotes out (${EXAMPLE}).`,
    };
  }
  const terms: SearchTerm[] = [];
  for (const match of text.matchAll(/"([^"]*)"(\*?)|([^\s"]+)/g)) {
    const raw = match[1] ?? match[3] ?? "";
    const prefix = match[1] !== undefined ? match[2] === "*" : raw.endsWith("*");
    const words = (raw.toLowerCase().match(WORD) ?? []).map((w) => w.slice(0, MAX_TERM_CHARS));
    if (words.length === 0) continue;
    // A bare token like "e-mail" or "v2.0" is a phrase of its parts, as the index splits it too.
    terms.push({ words: words.slice(0, 8), prefix });
  }
  if (terms.length === 0) {
    return { ok: false, error: `The query has no words to search for (${EXAMPLE}).` };
  }
  if (terms.length > MAX_QUERY_TERMS) {
    return { ok: false, error: `The query has ${terms.length} terms; at most ${MAX_QUERY_TERMS}.` };
  }
  return { ok: true, query: { terms } };
}

/** FTS5: every word double-quoted (a string, never syntax), phrases as one quoted string, AND between. */
export function toFts5Match(query: SearchQuery): string {
  return query.terms.map((t) => `"${t.words.join(" ")}"${t.prefix ? "*" : ""}`).join(" AND ");
}

/**
 * PostgreSQL tsquery text for `to_tsquery('simple', …)`: words are letters and digits only, so
 * each is a plain lexeme; a phrase joins its words with <->, a prefix adds :*.
 */
export function toTsquery(query: SearchQuery): string {
  return query.terms
    .map((t) => {
      const words = t.words.map((w, i) => (t.prefix && i === t.words.length - 1 ? `${w}:*` : w));
      return words.length === 1 ? words[0]! : `(${words.join(" <-> ")})`;
    })
    .join(" & ");
}
