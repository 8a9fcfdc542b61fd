/** Durations as people type them in schedule commands: `10m`, `2h30m`, `45s`, `1d`. */

const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
const UNIT_MS = [86_400_000, 3_600_000, 60_000, 1000] as const;

/**
 * Milliseconds in a duration like `10m`, `2h30m`, `45s`, `1d`; null when it is not one, or is too
 * large to count exactly (beyond Number.MAX_SAFE_INTEGER ms, about 285 000 years).
 */
export function parseDurationMs(text: string): number | null {
  const match = DURATION.exec(text.toLowerCase());
  if (!match || text === "") return null;
  let total = 0;
  for (let i = 0; i < UNIT_MS.length; i++) {
    const amount = match[i + 1];
    if (amount !== undefined) total += Number(amount) * (UNIT_MS[i] as number);
  }
  return total > 0 && Number.isSafeInteger(total) ? total : null;
}

/** `2h30m` for 9 000 000 ms; the inverse of parseDurationMs for whole seconds. */
export function formatDuration(ms: number): string {
  let rest = Math.round(ms / 1000) * 1000;
  let text = "";
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ] as const) {
    const amount = Math.floor(rest / size);
    if (amount > 0) text += `${amount}${unit}`;
    rest -= amount * size;
  }
  return text || "0s";
}
