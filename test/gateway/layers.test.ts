import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "../..");

/** Every .ts file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("src/gateway/ composes and is imported by no other module of src/, outbox/, schedules/ or channels/", () => {
  const files = ["src", "outbox", "schedules", "channels"]
    .flatMap((dir) => sources(join(ROOT, dir)))
    .filter(
      (file) =>
        !relative(ROOT, file).startsWith("src/gateway/") && !relative(ROOT, file).startsWith("src/cli/"),
    );
  expect(files.length).toBeGreaterThan(50);
  const offending = files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/from "([^"]+)"/g)]
      .map((match) => match[1]!)
      .filter(
        (path) => path.startsWith(".") && relative(ROOT, join(file, "..", path)).startsWith("src/gateway/"),
      )
      .map((path) => `${relative(ROOT, file)} imports ${path}`),
  );
  expect(offending).toEqual([]);
});
