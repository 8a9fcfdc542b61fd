/**
 * Deterministic chat-like text for the history-search benchmarks, so runs (and engines) compare:
 * a 5,000-word vocabulary drawn Zipf-like (low ranks common, as in chat text), and latency
 * percentiles over a list of timings.
 */

/** A deterministic pseudo-random source (LCG). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

export const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${"abcdefghij"[i % 10]}`);

export function chatText(seed: number) {
  const rand = random(seed);
  const word = () => VOCABULARY[Math.floor(VOCABULARY.length * rand() ** 3)]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(" ");
  return { rand, word, sentence };
}

/** p50 and p99 of `ms` (sorted in place). */
export function percentiles(ms: number[]): { p50: number; p99: number } {
  ms.sort((a, b) => a - b);
  return {
    p50: ms[Math.floor(ms.length * 0.5)]!,
    p99: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))]!,
  };
}
