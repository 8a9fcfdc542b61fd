import { expect, test } from "bun:test";
import { parseSearchQuery, toFts5Match, toTsquery } from "../../src/search/query.ts";

const parsed = (text: string) => {
  const result = parseSearchQuery(text);
  if (!result.ok) throw new Error(result.error);
  return result.query;
};

test("words, phrases and prefixes; everything else only separates words", () => {
  expect(parsed('Invoice "March report" deploy* e-mail')).toEqual({
    terms: [
      { words: ["invoice"], prefix: false },
      { words: ["march", "report"], prefix: false },
      { words: ["deploy"], prefix: true },
      { words: ["e", "mail"], prefix: false },
    ],
  });
  expect(toFts5Match(parsed('Invoice "March report" deploy*'))).toBe(
    '"invoice" AND "march report" AND "deploy"*',
  );
  expect(toTsquery(parsed('Invoice "March report" deploy*'))).toBe("invoice & (march <-> report) & deploy:*");
});

test("engine syntax in the text is words, never operators", () => {
  expect(toFts5Match(parsed("NEAR(a b) col:x ^y -z"))).toBe('"near a" AND "b" AND "col x" AND "y" AND "z"');
  expect(toTsquery(parsed("a & !b | c <-> d:*"))).toBe("a & b & c & d:*");
  expect(toFts5Match(parsed("Straße café"))).toBe('"straße" AND "café"');
});

test("malformed queries are clear errors", () => {
  const error = (text: string) => {
    const result = parseSearchQuery(text);
    return result.ok ? null : result.error;
  };
  expect(error('"unclosed')).toContain("unclosed quote");
  expect(error("   ")).toContain("no words");
  expect(error("!!! ??? ***")).toContain("no words");
  expect(error("x".repeat(257))).toContain("at most 256");
  expect(error(Array.from({ length: 13 }, (_, i) => `w${i}`).join(" "))).toContain("at most 12");
});
