/** Plain-text building blocks of the human output: aligned tables, times, previews. */

const EMPTY = "-";

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join("\n")}\n`;
}

/** `label: value` lines with the values aligned. */
export function fields(pairs: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...pairs.map(([label]) => label.length)) + 2;
  return `${pairs.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`).join("\n")}\n`;
}

/** ISO 8601 in UTC to the second (`2026-03-01T09:00:00Z`), or `-` for no time. */
export function isoTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return EMPTY;
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The text on one line (whitespace collapsed), cut to `maxChars` with an ellipsis. */
export function preview(text: string, maxChars = 48): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length === 0) return EMPTY;
  return flat.length <= maxChars ? flat : `${flat.slice(0, maxChars - 1)}…`;
}

export function orDash(value: string | number | null | undefined): string {
  return value === null || value === undefined || value === "" ? EMPTY : String(value);
}

/** A duration in the largest whole unit that fits (`90s` → `1m30s`, `7d`). */
export function duration(ms: number): string {
  const units: Array<[string, number]> = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ];
  if (ms < 1000) return `${ms}ms`;
  let rest = ms;
  const parts: string[] = [];
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
    if (parts.length === 2) break;
  }
  return parts.join("");
}
