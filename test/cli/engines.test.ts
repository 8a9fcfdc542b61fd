/**
 * package.json's `engines.node` says the truth: exactly the Node.js versions on which every
 * installed package's own `engines.node` holds, so `npm install` on a version it admits prints no
 * EBADENGINE warning, and it admits every version that would install cleanly.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./support/cli.ts";

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;

/** Every package npm installed here (the lock lists optional ones for other platforms too). */
function installedNodeRanges(): Array<{ name: string; range: string }> {
  const lock = readJson(join(ROOT, "package-lock.json")) as { packages: Record<string, unknown> };
  return Object.keys(lock.packages)
    .filter((path) => path !== "" && existsSync(join(ROOT, path, "package.json")))
    .flatMap((path) => {
      const engines = readJson(join(ROOT, path, "package.json")).engines as { node?: unknown } | undefined;
      return typeof engines?.node === "string"
        ? [{ name: path.replace(/^.*node_modules\//, ""), range: engines.node }]
        : [];
    });
}

/** Node versions from 18.0.0 to 26.x: each major's first minors, a late one, first and late patches. */
const PROBES = [18, 19, 20, 21, 22, 23, 24, 25, 26].flatMap((major) =>
  [...Array.from({ length: 21 }, (_, minor) => minor), 99].flatMap((minor) => [
    `${major}.${minor}.0`,
    `${major}.${minor}.99`,
  ]),
);

test("engines.node admits exactly the Node versions every installed package supports", () => {
  const ours = (readJson(join(ROOT, "package.json")).engines as { node: string }).node;
  const ranges = installedNodeRanges();
  expect(ranges.length).toBeGreaterThan(0);
  const refusedBy = (version: string) =>
    ranges
      .filter(({ range }) => !Bun.semver.satisfies(version, range))
      .map(({ name, range }) => `${name} (${range})`);
  const wrong = PROBES.flatMap((version) => {
    const refusals = refusedBy(version);
    const admitted = Bun.semver.satisfies(version, ours);
    if (admitted && refusals.length > 0)
      return [`${version} is admitted, but ${refusals.join(", ")} refuse it`];
    if (!admitted && refusals.length === 0) return [`${version} installs cleanly, but is refused`];
    return [];
  });
  expect(wrong).toEqual([]);
});
