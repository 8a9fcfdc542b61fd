/** Prints the slowest test files of a `bun test --reporter=junit` report: `bun .ci/slowest.ts report.xml [N]`. */
import { readFileSync } from "node:fs";

const [file, count = "20"] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: bun .ci/slowest.ts <junit.xml> [N]\n");
  process.exit(2);
}
const xml = readFileSync(file, "utf8");
// The file-level suites are the ones indented by four spaces, directly under <testsuites>.
const files = [
  ...xml.matchAll(/^ {2}<testsuite name="([^"]+)"[^>]* tests="(\d+)"[^>]* time="([\d.]+)"/gm),
].map((m) => ({ name: m[1] ?? "", tests: Number(m[2]), seconds: Number(m[3]) }));
files.sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((sum, f) => sum + f.seconds, 0);
process.stdout.write(`slowest ${count} of ${files.length} test files (${total.toFixed(0)} s in all):\n`);
for (const f of files.slice(0, Number(count)))
  process.stdout.write(
    `${f.seconds.toFixed(1).padStart(7)} s  ${String(f.tests).padStart(3)} tests  ${f.name}\n`,
  );
