/** Small helpers shared by the benchmark scripts. */
export function argInt(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

export function printTable(
  title: string,
  rows: Array<[label: string, perSecond: number, ratio: number]>,
): void {
  console.log(`\n${title}`);
  for (const [label, perSecond, ratio] of rows) {
    console.log(
      `  ${label.padEnd(44)} ${Math.round(perSecond).toString().padStart(9)} /s   ratio ${ratio.toFixed(2)}`,
    );
  }
}
