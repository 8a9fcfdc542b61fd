/** Runs every benchmark in sequence: `npm run bench`. Each prints its own figures and ratios. */
const benches = [
  "admission.ts",
  "turn-overhead.ts",
  "schedules.ts",
  "outbox-drain.ts",
  "tool-call-overhead.ts",
  "tool-catalog-bytes.ts",
];
for (const bench of benches) {
  const child = Bun.spawn([process.execPath, `${import.meta.dir}/${bench}`, ...process.argv.slice(2)], {
    stdout: "inherit",
    stderr: "inherit",
  });
  if ((await child.exited) !== 0) process.exit(1);
}
