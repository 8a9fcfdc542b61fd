import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const OUTBOX_DIR = join(import.meta.dir, "../../outbox");

test("the outbox reaches storage only through its repository interface and platforms only through adapters", () => {
  const files = readdirSync(OUTBOX_DIR).filter((name) => name.endsWith(".ts"));
  expect(files.length).toBeGreaterThan(5);
  for (const name of files) {
    const source = readFileSync(join(OUTBOX_DIR, name), "utf8");
    const imports = [...source.matchAll(/from "([^"]+)"/g)].map((match) => match[1]!);
    for (const path of imports) {
      expect({ file: name, path, sql: path === "bun:sqlite" || path.includes("/store/") }).toEqual({
        file: name,
        path,
        sql: false,
      });
      expect({
        file: name,
        path,
        platform: /channels\/(?!types\.ts)|grammy|discord\.js|@slack/.test(path),
      }).toEqual({
        file: name,
        path,
        platform: false,
      });
    }
  }
});
