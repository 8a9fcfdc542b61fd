import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const whatsappDir = join(import.meta.dir, "../../../channels/whatsapp");

function importsOf(file: string): string[] {
  const source = readFileSync(join(whatsappDir, file), "utf8");
  return [...source.matchAll(/from\s+"([^"]+)"/g)].map((match) => match[1] ?? "");
}

describe("channels/whatsapp boundaries", () => {
  test("the channel speaks to the Cloud API with fetch: no SDK, only zod and node:crypto from outside", () => {
    const files = readdirSync(whatsappDir).filter((name) => name.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const outside = importsOf(file).filter((name) => !name.startsWith("."));
      expect({ file, outside: outside.filter((name) => name !== "zod" && name !== "node:crypto") }).toEqual({
        file,
        outside: [],
      });
    }
  });

  test("the webhook path (verify, schema, parse, status) does not import the client", () => {
    for (const file of ["verify.ts", "webhook-schema.ts", "parse.ts", "status.ts"]) {
      expect(importsOf(file).filter((name) => name.includes("client"))).toEqual([]);
    }
  });
});
